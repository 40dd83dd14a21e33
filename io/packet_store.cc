#include "io/packet_store.h"

namespace tandem {

void PacketStore::add(const uint8_t* data, uint32_t cap, uint32_t wire, uint64_t ts) {
  offset.push_back(bytes.size());
  // insert() with a null range is fine for cap == 0, but a null `data` with cap > 0 is a bug.
  if (cap != 0) bytes.insert(bytes.end(), data, data + cap);
  caplen.push_back(cap);
  wire_len.push_back(wire);
  ts_ns.push_back(ts);
}

PacketStore PacketStore::select(const std::vector<uint32_t>& which) const {
  PacketStore s;
  uint64_t bytes_needed = 0;
  for (uint32_t i : which) bytes_needed += caplen[i];
  s.bytes.reserve(bytes_needed);
  s.offset.reserve(which.size());
  s.caplen.reserve(which.size());
  s.wire_len.reserve(which.size());
  s.ts_ns.reserve(which.size());
  for (uint32_t i : which) s.add(frame(i), caplen[i], wire_len[i], ts_ns[i]);
  return s;
}

uint64_t PacketStore::total_caplen() const {
  // Summed from caplen rather than bytes.size(), so a store whose bytes were reserved or padded
  // by a producer still reports what the frames hold.
  uint64_t total = 0;
  for (uint32_t c : caplen) total += c;
  return total;
}

}  // namespace tandem
