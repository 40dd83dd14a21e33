// What the table fuzz target checks (fuzz/table_fuzz.cc), shared with tests/table_fuzz_test.cc,
// which runs the same checks on mutated real tables under any compiler. check_table_input takes a
// file's bytes and returns nullptr when every invariant holds, else what broke:
//   LineReader: every line it returns holds no newline and no NUL byte and fits the cap; a read
//     that ends cleanly gives back the input exactly (lines joined by newlines, a final newline
//     and the CR of a CRLF or ending the input aside); an error is one the input calls for (a NUL byte, a line
//     over the cap, or a gzip stream);
//   the table loaders (IPv4 and IPv6 prefixes, NDN names, L2 MACs) load or throw their documented
//     error, and what loads is valid: prefix lengths in range with host bits clear, next hops and
//     ports within range (never the flood marker), NDN names within the component limit, no
//     group MAC.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/ipv4/fib_loader.h"
#include "apps/ipv6/fib6_loader.h"
#include "apps/l2/l2_loader.h"
#include "apps/ndn/ndn_fib.h"
#include "core/batch.h"
#include "core/table_reader.h"
#include "fuzz/input_file.h"

namespace tandem::fuzz {

inline const char* check_line_reader(const std::string& path, const std::string& input) {
  constexpr size_t kCap = 256;  // small, so that over-long lines occur
  LineLimits lim;
  lim.max_line = kCap;
  std::string joined;
  const bool gzip = input.size() >= 2 && static_cast<uint8_t>(input[0]) == 0x1f && static_cast<uint8_t>(input[1]) == 0x8b;
  try {
    LineReader in(path, lim);
    uint64_t n = 0;
    for (std::string_view l; in.next(&l);) {
      if (in.line_number() != ++n) return "line numbers skip";
      if (l.size() > kCap) return "a line over the cap";
      if (l.find('\n') != std::string_view::npos) return "a newline inside a line";
      if (l.find('\0') != std::string_view::npos) return "a NUL byte inside a line";
      joined.append(l);
      joined += '\n';
    }
  } catch (const LineError& e) {
    if (gzip) return nullptr;
    // The reason after "PATH:LINE: " (the excerpt quoted after it may hold any text).
    std::string what = e.what();
    if (what.compare(0, path.size() + 1, path + ":") != 0) return "a line error that does not name the file";
    size_t at = path.size() + 1;
    while (at < what.size() && what[at] >= '0' && what[at] <= '9') ++at;
    what = what.substr(std::min(what.size(), at + 2));
    if (what.rfind("NUL byte", 0) == 0) return input.find('\0') == std::string::npos ? "a NUL error without a NUL" : nullptr;
    if (what.rfind("line too long", 0) == 0) {
      size_t longest = 0, cur = 0;
      for (char c : input) {
        cur = c == '\n' ? 0 : cur + 1;
        longest = std::max(longest, cur);
      }
      return longest <= kCap ? "a too-long error without a long line" : nullptr;
    }
    return "a line error of an unknown kind";
  } catch (const TableError&) {
    return gzip ? nullptr : "a stream error on plain input";
  }
  if (gzip) return nullptr;
  // The input as the reader should see it: CR before a newline dropped, a final newline added.
  // A final line without a newline loses a trailing CR too, and is a line even if that leaves it
  // empty.
  std::string want;
  for (size_t i = 0; i < input.size(); ++i) {
    if (input[i] == '\r' && i + 1 < input.size() && input[i + 1] == '\n') continue;
    want += input[i];
  }
  if (!want.empty() && want.back() == '\r') want.back() = '\n';
  if (!want.empty() && want.back() != '\n') want += '\n';
  return joined == want ? nullptr : "the lines read do not give back the input";
}

inline const char* check_table_input(const uint8_t* data, size_t size) {
  const InputFile in(data, size, ".table");
  if (in.path.empty()) return nullptr;
  if (const char* what = check_line_reader(in.path, std::string(reinterpret_cast<const char*>(data), size))) return what;
  try {
    const ipv4::Fib f = ipv4::load_fib(in.path);
    for (const ipv4::Route& r : f.routes) {
      if (r.len > 32) return "an IPv4 prefix longer than 32";
      if (r.len < 32 && (r.prefix & (~0u >> r.len))) return "IPv4 host bits left set";
      if (r.next_hop > Verdict::kMaxPort) return "an IPv4 next hop out of range";
    }
  } catch (const ipv4::FibError&) {
  }
  try {
    const ipv6::Fib6 f = ipv6::load_fib6(in.path);
    for (const ipv6::Route6& r : f.routes) {
      if (r.len > 128) return "an IPv6 prefix longer than 128";
      if (r.next_hop > Verdict::kMaxPort) return "an IPv6 next hop out of range";
      for (int b = r.len; b < 128; ++b) {
        if (r.prefix[b / 8] & (0x80 >> (b % 8))) return "IPv6 host bits left set";
      }
    }
  } catch (const ipv6::Fib6Error&) {
  }
  try {
    const ndn::NdnFibFile f = ndn::load_ndn_fib(in.path);
    for (const auto& [name, nh] : f.routes) {
      if (name.size() > static_cast<size_t>(ndn::kMaxComponents)) return "an NDN name over the component limit";
      if (nh > Verdict::kMaxPort) return "an NDN next hop out of range";
    }
  } catch (const TableError&) {
  }
  try {
    l2::MacTable table(1024);
    std::vector<std::pair<uint64_t, uint32_t>> entries;
    l2::load_l2_table(in.path, table, &entries);
    for (const auto& [mac, port] : entries) {
      if (l2::mac_is_group(mac)) return "a group MAC in the L2 table";
      if (port > l2::kMaxPort) return "an L2 port out of range";
      if (table.lookup(mac) == l2::kMiss) return "a loaded MAC missing from the table";
    }
  } catch (const l2::L2TableError&) {
  }
  return nullptr;
}

}  // namespace tandem::fuzz
