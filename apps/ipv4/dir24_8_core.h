// The IPv4 longest-prefix-match lookup on a DIR-24-8 table, written once for the CPU paths and the
// GPU kernel. No allocation, no I/O, no branches on table state beyond the one the layout needs.
//
// Layout (as in DPDK's rte_lpm): tbl24 has one 32-bit entry per /24 (2^24 entries, 64 MiB);
// an entry either holds a next hop directly, or points to a tbl8 group of 256 entries that covers
// the last octet for prefixes longer than /24.
//
//   bits  0..23  next hop, or the tbl8 group index when kExtBit is set
//   bit   24     valid: a route covers this entry
//   bit   25     extended (tbl24 only): bits 0..23 name a tbl8 group
//   bits 26..31  depth (prefix length 0..32) of the route that wrote this entry
#pragma once

#include "core/compiler.h"
#include "core/lookup_result.h"

namespace tandem::ipv4 {

using tandem::kNoRoute;  // lookup result when no prefix matches
inline constexpr uint32_t kMaxNextHop = 0x00FFFFFFu;

struct Dir24_8Entry {
  static constexpr uint32_t kValueMask = 0x00FFFFFFu;
  static constexpr uint32_t kValidBit = 1u << 24;
  static constexpr uint32_t kExtBit = 1u << 25;
  static constexpr uint32_t kDepthShift = 26;

  TANDEM_HD static constexpr uint32_t make(uint32_t next_hop, uint32_t depth) {
    return kValidBit | (depth << kDepthShift) | (next_hop & kValueMask);
  }
  TANDEM_HD static constexpr uint32_t make_ext(uint32_t group) { return kValidBit | kExtBit | group; }
  TANDEM_HD static constexpr bool valid(uint32_t e) { return (e & kValidBit) != 0; }
  TANDEM_HD static constexpr bool ext(uint32_t e) { return (e & kExtBit) != 0; }
  TANDEM_HD static constexpr uint32_t depth(uint32_t e) { return e >> kDepthShift; }
  TANDEM_HD static constexpr uint32_t value(uint32_t e) { return e & kValueMask; }
};

// The tbl24 index of an address, and the tbl8 slot it reads when its tbl24 entry is extended.
TANDEM_HD_INLINE uint32_t dir24_8_tbl24_index(uint32_t ip) { return ip >> 8; }
TANDEM_HD_INLINE uint32_t dir24_8_tbl8_index(uint32_t tbl24_entry, uint32_t ip) {
  return (Dir24_8Entry::value(tbl24_entry) << 8) | (ip & 0xFFu);
}

// Resolves a tbl24 entry already loaded (the batched CPU path loads it after a prefetch).
TANDEM_HD_INLINE uint32_t dir24_8_resolve(const uint32_t* tbl8, uint32_t e, uint32_t ip) {
  if (TANDEM_UNLIKELY(Dir24_8Entry::ext(e))) e = tbl8[dir24_8_tbl8_index(e, ip)];
  return Dir24_8Entry::valid(e) ? Dir24_8Entry::value(e) : kNoRoute;
}

// Next hop of `ip` (host byte order), or kNoRoute.
TANDEM_HD_INLINE uint32_t dir24_8_lookup(const uint32_t* tbl24, const uint32_t* tbl8, uint32_t ip) {
  return dir24_8_resolve(tbl8, tbl24[dir24_8_tbl24_index(ip)], ip);
}

}  // namespace tandem::ipv4
