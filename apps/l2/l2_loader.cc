#include "apps/l2/l2_loader.h"

#include <algorithm>

#include "core/table_reader.h"

namespace tandem::l2 {

L2LoadStats load_l2_table(const std::string& path, MacTable& table, std::vector<std::pair<uint64_t, uint32_t>>* entries) {
  L2LoadStats stats;
  stats.path = path;
  try {
    TableReader in(path);
    constexpr const char* kTooMany = "too many columns (expected MAC PORT)";
    TableReader::Column col[2];
    for (int ncol; (ncol = in.next(col, 2, kTooMany)) > 0;) {
      if (ncol < 2) in.fail("missing port (expected MAC PORT)");
      uint64_t mac = 0;
      if (!parse_mac(col[0].view(), &mac)) in.fail("bad MAC address (expected aa:bb:cc:dd:ee:ff)");
      if (mac_is_group(mac)) in.fail("group (multicast/broadcast) MAC cannot be a table entry: it is always flooded");
      uint64_t port = 0;
      if (!parse_decimal(col[1].view(), kMaxPort, &port)) {
        in.fail("port must be an integer 0.." + std::to_string(kMaxPort));
      }
      const uint32_t before = table.lookup(mac);
      switch (table.insert(mac, static_cast<uint32_t>(port))) {
        case MacTable::Status::kInserted:
          break;
        case MacTable::Status::kUpdated:
          stats.duplicates.add(in, before != port);
          break;
        case MacTable::Status::kFull:
          in.fail("MAC table full (" + std::to_string(table.size()) + " entries in " +
                  std::to_string(table.slot_count()) + " slots)");
        case MacTable::Status::kBadMac:
        case MacTable::Status::kBadPort:
          in.fail("entry refused by the table");  // not reached: both were checked above
      }
      ++stats.entries;
      if (entries) entries->emplace_back(mac, static_cast<uint32_t>(port));
      stats.max_port = std::max(stats.max_port, static_cast<uint32_t>(port));
    }
    stats.lines = in.line_number();
  } catch (const TableError& e) {
    throw L2TableError(e.what());
  }
  return stats;
}

size_t count_l2_entries(const std::string& path) {
  size_t lines = 0;
  try {
    TableReader count(path);
    TableReader::Column col[2];
    while (count.next(col, 2, "too many columns (expected MAC PORT)") > 0) ++lines;
  } catch (const TableError& e) {
    throw L2TableError(e.what());
  }
  return lines;
}

}  // namespace tandem::l2
