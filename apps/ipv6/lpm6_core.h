// The IPv6 longest-prefix-match lookup on an rte_lpm6-style table, written once for the CPU paths
// and a GPU kernel. No allocation, no I/O.
//
// Layout (as in DPDK's rte_lpm6): tbl24 has one 32-bit entry per value of the address's first
// three bytes (2^24 entries, 64 MiB); an extended entry points to a tbl8 group of 256 entries
// indexed by the next byte, and so on: at most 13 groups deep, for a /128.
//
// The entry bits are DIR-24-8's (apps/ipv4/dir24_8_core.h: next hop or group index in bits 0..23,
// valid bit 24, extended bit 25, depth in bits 26..31), shared rather than redefined. Only the
// meaning of the 6 depth bits differs, because IPv6 depths (0..128) do not fit in 6 bits: they hold
// the route's depth *relative to the level* (see Lpm6Entry below). The lookup never reads them.
#pragma once

#include "apps/ipv4/dir24_8_core.h"
#include "core/compiler.h"
#include "core/lookup_result.h"

namespace tandem::ipv6 {

using tandem::kNoRoute;  // lookup result without a route
inline constexpr uint32_t kMaxNextHop = ipv4::kMaxNextHop;  // next hops are 0..2^24-1

inline constexpr int kTbl24Bytes = 3;      // address bytes that index tbl24
inline constexpr int kMaxTbl8Levels = 13;  // tbl8 levels a /128 needs (bytes 3..15)

// An entry of a level whose slots stand for prefixes of length base + stride (tbl24: base 0,
// stride 24; the tbl8 level reached after k groups: base 16 + 8k, stride 8). Its depth field
// ("code") says which route wrote it, relative to that base:
//   - a plain entry: code = depth - base for a route longer than the base (1..stride); 0 for the
//     group's "background", the longest route of depth <= base covering the whole group (at
//     tbl24, the ::/0 route). All background slots of a group hold the same entry.
//   - an extended entry: the same code, for the background of the group it points to (the
//     longest route of depth <= base + stride covering that group).
// That is all the control plane needs to keep longer routes from being overwritten by shorter
// ones, and to find what a deleted route owned, without a depth array beside the table.
struct Lpm6Entry : ipv4::Dir24_8Entry {
  static constexpr uint32_t kMaxCode = 63;
  TANDEM_HD static constexpr uint32_t make_ext(uint32_t group, uint32_t background_code) {
    return kValidBit | kExtBit | (background_code << kDepthShift) | group;
  }
  TANDEM_HD static constexpr uint32_t code(uint32_t e) { return depth(e); }
};

// The first `len` bits of `in` (16 bytes), the rest zero, into `out` (may be `in`).
TANDEM_HD_INLINE void lpm6_mask(const uint8_t* in, unsigned len, uint8_t* out) {
  for (unsigned i = 0; i < 16; ++i) {
    const unsigned bits = len >= 8 * (i + 1) ? 8 : len > 8 * i ? len - 8 * i : 0;
    out[i] = static_cast<uint8_t>(in[i] & (bits ? 0xFFu << (8 - bits) : 0u));
  }
}

TANDEM_HD_INLINE uint32_t lpm6_tbl24_index(const uint8_t* addr) {
  return (uint32_t{addr[0]} << 16) | (uint32_t{addr[1]} << 8) | addr[2];
}

// The tbl8 slot an extended entry leads to for address byte `byte`. Fits 32 bits: group indices
// are below 2^24.
TANDEM_HD_INLINE uint32_t lpm6_tbl8_index(uint32_t ext_entry, uint8_t byte) {
  return (Lpm6Entry::value(ext_entry) << 8) | byte;
}

TANDEM_HD_INLINE uint32_t lpm6_result(uint32_t e) {
  return Lpm6Entry::valid(e) ? Lpm6Entry::value(e) : kNoRoute;
}

// Finishes a lookup whose tbl24 entry `e` is already loaded: walks the groups from address byte 3.
TANDEM_HD_INLINE uint32_t lpm6_resolve(const uint32_t* tbl8, uint32_t e, const uint8_t* addr) {
  int byte = kTbl24Bytes;
  while (Lpm6Entry::ext(e)) e = tbl8[lpm6_tbl8_index(e, addr[byte++])];
  return lpm6_result(e);
}

// Next hop of the 16-byte address `addr` (network byte order), or kNoRoute. The table guarantees
// the walk ends by byte 15: no entry of the 13th tbl8 level is extended.
TANDEM_HD_INLINE uint32_t lpm6_lookup(const uint32_t* tbl24, const uint32_t* tbl8, const uint8_t* addr) {
  return lpm6_resolve(tbl8, tbl24[lpm6_tbl24_index(addr)], addr);
}

}  // namespace tandem::ipv6
