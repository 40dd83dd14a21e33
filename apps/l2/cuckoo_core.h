// The L2 switch's MAC table lookup (CuckooSwitch, Zhou et al. CoNEXT'13; the G-Opt paper's L2
// switch), written once for the CPU paths and a GPU kernel: plain pointers, no allocation, no I/O.
//
// A MAC address is a 48-bit integer, first octet most significant: "aa:bb:cc:dd:ee:ff" is
// 0xaabbccddeeff (network order read as a big-endian number). Its group (multicast/broadcast)
// bit, the least significant bit of the first octet, is bit 40.
//
// Table: 2-choice cuckoo hashing with 8-slot buckets ("2-8", as CuckooSwitch and MemC3). The
// number of buckets is a power of two; a MAC may live in bucket mac_hash1 & mask or mac_hash2 &
// mask, two independent hashes (the 64-bit finalizer of core/flow_hash.h on the MAC XOR two
// different seeds).
//
// Layout: a bucket is 8 slots of one uint64_t = 64 bytes = one cache line, 64-byte aligned, so a
// lookup reads at most two cache lines (one per candidate bucket) and a batched lookup can
// prefetch both at once. The key and the value share the slot, so there is no second line to
// fetch for the value (a tag array + separate keys would cost two dependent lines per bucket):
//
//     bits 16..63  the MAC (48 bits)
//     bits  0..15  port + 1 (1..0xFFFF); 0 means the slot is empty
//
// Why "port + 1": all 2^48 MACs are legal keys (00:00:00:00:00:00 and ff:ff:ff:ff:ff:ff too), so
// the empty marker cannot be a reserved key; it is a reserved value instead. An empty slot is the
// all-zero word, so zero-filled memory is an empty table, and no stored entry is ever zero
// (its value field is at least 1). The price is one port number: ports are 0..kMaxPort (65534).
//
// Matching a slot is one XOR and one compare: x = slot ^ (mac << 16) is in 1..0xFFFF exactly when
// the slot holds `mac` (key bits equal, value field non-zero), and then x - 1 is the port.
#pragma once

#include "core/compiler.h"
#include "core/flow_hash.h"

namespace tandem::l2 {

inline constexpr uint32_t kMiss = 0xFFFFFFFFu;   // lookup result: MAC not in the table
inline constexpr uint32_t kFlood = 0xFFFFFFFEu;  // forward result: send out of every port but the input
inline constexpr uint32_t kMaxPort = 0xFFFEu;    // ports are 0..kMaxPort (the value field holds port + 1)
inline constexpr uint64_t kMacMask = 0xFFFFFFFFFFFFull;
inline constexpr uint64_t kMacGroupBit = 1ull << 40;
inline constexpr uint32_t kSlotsPerBucket = 8;
inline constexpr uint64_t kEmptySlot = 0;

// Different odd seeds for the two hashes; any fixed pair would do, these are digits of pi and e.
inline constexpr uint64_t kMacHashSeed1 = 0x243F6A8885A308D3ull;
inline constexpr uint64_t kMacHashSeed2 = 0xB7E151628AED2A6Bull;

TANDEM_HD_INLINE uint64_t mac_hash1(uint64_t mac) { return mix64(mac ^ kMacHashSeed1); }
TANDEM_HD_INLINE uint64_t mac_hash2(uint64_t mac) { return mix64(mac ^ kMacHashSeed2); }

TANDEM_HD_INLINE constexpr bool mac_is_group(uint64_t mac) { return (mac & kMacGroupBit) != 0; }

// Slot encoding (see the layout above). make() expects mac <= kMacMask and port <= kMaxPort.
TANDEM_HD_INLINE constexpr uint64_t mac_slot_make(uint64_t mac, uint32_t port) {
  return (mac << 16) | (uint64_t{port} + 1);
}
TANDEM_HD_INLINE constexpr bool mac_slot_empty(uint64_t slot) { return (slot & 0xFFFFu) == 0; }
TANDEM_HD_INLINE constexpr uint64_t mac_slot_mac(uint64_t slot) { return slot >> 16; }
TANDEM_HD_INLINE constexpr uint32_t mac_slot_port(uint64_t slot) {
  return static_cast<uint32_t>(slot & 0xFFFFu) - 1;
}

// The first slot of bucket `b` (slots is the table's array of buckets * kSlotsPerBucket words).
TANDEM_HD_INLINE const uint64_t* mac_bucket(const uint64_t* slots, uint64_t b) {
  return slots + b * kSlotsPerBucket;
}

// The port stored for `mac` in one bucket, or kMiss. Branch-free over the 8 slots (no divergence
// on a GPU, no mispredictions on a CPU); a MAC is stored at most once, so at most one slot matches.
TANDEM_HD_INLINE uint32_t mac_bucket_probe(const uint64_t* bucket, uint64_t mac) {
  const uint64_t want = mac << 16;
  uint32_t port = kMiss;
  for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    const uint64_t x = bucket[s] ^ want;
    if (x - 1 < 0xFFFFu) port = static_cast<uint32_t>(x) - 1;
  }
  return port;
}

// The port of `mac`, its two buckets already located (the batched path prefetched both): bucket 1
// first, bucket 2 only if it misses. Insert prefers bucket 1, so most hits end after one bucket
// (99% of entries at load 0.5, 87% at 0.9). Probing both always and AND-ing the results (kMiss is
// all ones and at most one bucket holds the MAC) avoids the branch; on CPUs it was measured faster
// only with many absent keys in a cache-resident table, and 1.3-1.9x slower when all are present.
// A value above 48 bits is never in the table (its low 48 bits might be).
TANDEM_HD_INLINE uint32_t mac_lookup_buckets(const uint64_t* b1, const uint64_t* b2, uint64_t mac) {
  if (TANDEM_UNLIKELY(mac > kMacMask)) return kMiss;
  const uint32_t port = mac_bucket_probe(b1, mac);
  return port != kMiss ? port : mac_bucket_probe(b2, mac);
}

// The port of `mac`, or kMiss. `mask` is the number of buckets - 1. Bucket 2 is prefetched before
// bucket 1 is probed, so that a miss in bucket 1 does not wait for a second full memory latency
// after its branch resolves (measured on one core: 1.3-1.7x with half the keys absent, no loss when
// all are present; prefetch_read is a no-op on a GPU).
TANDEM_HD_INLINE uint32_t mac_lookup(const uint64_t* slots, uint64_t mask, uint64_t mac) {
  const uint64_t* b1 = mac_bucket(slots, mac_hash1(mac) & mask);
  const uint64_t* b2 = mac_bucket(slots, mac_hash2(mac) & mask);
  prefetch_read(b2);
  return mac_lookup_buckets(b1, b2, mac);
}

// Learning-switch forwarding decision from a lookup result: group (multicast/broadcast)
// destinations and unknown unicast destinations are flooded; known ones go to their port.
TANDEM_HD_INLINE uint32_t mac_forward_decision(uint64_t dst_mac, uint32_t looked_up) {
  return (mac_is_group(dst_mac) || looked_up == kMiss) ? kFlood : looked_up;
}

}  // namespace tandem::l2
