// Loading the L2 switch's static MAC table from a text file (the control plane's input).
//
// Format, one entry per line, whitespace-separated:
//     MAC PORT        e.g. "00:1b:21:3a:4f:01 3"
// MAC is strict "aa:bb:cc:dd:ee:ff" (six groups of two hex digits, either case, ':' between; see
// parse_mac); PORT is a decimal integer 0..65534 (kMaxPort). '#' starts a comment; blank lines are
// ignored; files ending in .gz are decompressed (zlib reads plain files too), as every Tandem table
// (core/table_reader.h). A later line for the same MAC replaces the earlier one (last wins,
// counted as a duplicate). Group (multicast/broadcast) MACs are refused: forward() floods them
// without a lookup, so such an entry could never be used.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "apps/l2/mac_table.h"
#include "core/table_reader.h"

namespace tandem::l2 {

// A malformed table: "FILE:LINE: what is wrong: `the line`" (or "FILE: cannot open: ...").
class L2TableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct L2LoadStats {
  std::string path;
  uint64_t lines = 0;       // lines read
  uint64_t entries = 0;     // lines that gave an entry (duplicates included)
  DuplicateKeys duplicates;  // entries whose MAC was already in the table (replaced: last wins)
  uint32_t max_port = 0;
};

// Inserts every entry of the file into `table` (sized by the caller). Throws L2TableError naming
// the file and line for a malformed line, and for a line whose entry does not fit (the table is
// full: the entries of the lines before it stay inserted).
// With `entries`, every entry read is also appended there (MAC, port), in file order.
L2LoadStats load_l2_table(const std::string& path, MacTable& table,
                          std::vector<std::pair<uint64_t, uint32_t>>* entries = nullptr);

// Entries in a table file: its lines with columns (a first pass, to size the MacTable).
size_t count_l2_entries(const std::string& path);

}  // namespace tandem::l2
