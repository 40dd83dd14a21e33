// The NDN FIB's lookup (ndn_fib.h), written once as `__host__ __device__` code over plain arrays, so
// that the CPU paths and the GPU kernel (ndn_gpu.h) resolve a name the same way.
//
// A name is given as the value of its Name TLV: its component TLVs back to back, as they sit in an
// Interest (and as the FIB stores its prefixes). Prefix k (its first k components) hashes to
// hash[k] = ndn_hash_step(hash[k-1], component k's TLV bytes), hash[0] = kNdnHashSeed; the
// lookup computes every prefix's hash in one pass and probes them from the longest down. A hit
// needs the 32-bit tag, the 64-bit hash and the prefix's bytes to match, so it is exact.
#pragma once

#include <cstdint>
#include <cstring>

#include "apps/ndn/ndn_tlv.h"
#include "core/compiler.h"
#include "core/flow_hash.h"
#include "core/lookup_result.h"

namespace tandem::ndn {

using tandem::kNoRoute;  // lookup result when no FIB prefix matches
inline constexpr uint64_t kNdnHashSeed = 0x6E646E5F66696221ULL;

// Hash of a name prefix, extended one component at a time: h(k) = combine(h(k-1), component k).
// A component is hashed as its TLV bytes (type, length, value) so that typed components differ.
TANDEM_HD_INLINE uint64_t ndn_hash_step(uint64_t h, const uint8_t* tlv, uint32_t len) {
  uint64_t x = h ^ (uint64_t{len} * 0x9E3779B97F4A7C15ULL);
  uint32_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w = 0;
#if defined(__CUDA_ARCH__)
    for (int b = 0; b < 8; ++b) w |= uint64_t{tlv[i + b]} << (8 * b);  // names are not 8-byte aligned
#else
    std::memcpy(&w, tlv + i, 8);  // one unaligned load (x86 is little-endian: the same word)
#endif
    x = (x ^ w) * 0xFF51AFD7ED558CCDULL;
    x ^= x >> 32;
  }
  uint64_t w = 0;
  for (int b = 0; i < len; ++i, ++b) w |= uint64_t{tlv[i]} << (8 * b);
  x = (x ^ w) * 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 29;
  x *= 0xFF51AFD7ED558CCDULL;
  return x ^ (x >> 32);
}

// Table layout: 2 candidate buckets of 8 slots, one 64-byte line each; a slot holds a 32-bit tag
// of the hash (0: empty) and the entry's index. Entries hold the hash, the next hop and where the
// prefix's bytes are in the byte array.
struct alignas(64) NdnFibBucket {
  uint32_t tag[8];
  uint32_t entry[8];
};
struct NdnFibEntry {
  uint64_t hash;
  uint32_t next_hop;
  uint32_t bytes_offset;
  uint32_t bytes_length;
};
struct NdnFibView {
  const NdnFibBucket* buckets;
  uint64_t mask;  // buckets - 1 (a power of two minus one)
  const NdnFibEntry* entries;
  const uint8_t* bytes;
  int max_components;  // the longest prefix stored: longer prefixes of a name are not probed
};

TANDEM_HD_INLINE uint32_t ndn_tag_of(uint64_t h) { return static_cast<uint32_t>(h >> 32) | 1u; }
TANDEM_HD_INLINE uint64_t ndn_bucket1(uint64_t h, uint64_t mask) { return h & mask; }
// The other bucket from either one: XOR with a hash of the tag (partial-key cuckoo hashing).
TANDEM_HD_INLINE uint64_t ndn_other_bucket(uint64_t b, uint32_t tag, uint64_t mask) {
  return (b ^ mix64(tag)) & mask;
}

// The hashes and ends (byte offsets in `name`) of the name's prefixes of 0..m components, m =
// min(components, max_components); -1 if the name's TLVs are malformed.
TANDEM_HD_INLINE int ndn_prefix_hashes(const uint8_t* name, uint32_t len, int max_components, uint64_t* hash,
                                       uint32_t* end) {
  hash[0] = kNdnHashSeed;
  end[0] = 0;
  int m = 0;
  uint32_t pos = 0;
  while (pos < len && m < max_components) {
    uint64_t type = 0;
    uint32_t vb = 0, ve = 0;
    if (ndn_read_tlv(name, len, &pos, &type, &vb, &ve) != NdnStatus::kOk) return -1;
    end[m + 1] = pos;
    hash[m + 1] = ndn_hash_step(hash[m], name + end[m], pos - end[m]);
    ++m;
  }
  return m;
}

TANDEM_HD_INLINE bool ndn_bytes_equal(const uint8_t* a, const uint8_t* b, uint32_t n) {
#if defined(__CUDA_ARCH__)
  for (uint32_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
#else
  // Vectorized: a byte loop was a third of a lookup. memcmp may not be given a null pointer, even
  // for 0 bytes (the empty name's bytes are one).
  return n == 0 || std::memcmp(a, b, n) == 0;
#endif
}

// Index of the entry for (h, bytes[0..len)), or -1.
TANDEM_HD_INLINE long ndn_fib_find(const NdnFibView& v, uint64_t h, const uint8_t* bytes, uint32_t len) {
  const uint32_t tag = ndn_tag_of(h);
  const uint64_t b1 = ndn_bucket1(h, v.mask);
  const uint64_t bs[2] = {b1, ndn_other_bucket(b1, tag, v.mask)};
  for (int i = 0; i < 2; ++i) {
    const NdnFibBucket& k = v.buckets[bs[i]];
    for (int s = 0; s < 8; ++s) {
      if (k.tag[s] != tag) continue;
      const NdnFibEntry& e = v.entries[k.entry[s]];
      if (e.hash != h || e.bytes_length != len) continue;
      if (ndn_bytes_equal(v.bytes + e.bytes_offset, bytes, len)) return static_cast<long>(k.entry[s]);
    }
  }
  return -1;
}

// The longest of the m + 1 prefixes in the table, probing from the longest down.
TANDEM_HD_INLINE uint32_t ndn_fib_resolve(const NdnFibView& v, const uint8_t* name, const uint64_t* hash,
                                          const uint32_t* end, int m) {
  for (int k = m; k >= 0; --k) {
    const long e = ndn_fib_find(v, hash[k], name, end[k]);
    if (e >= 0) return v.entries[e].next_hop;
  }
  return kNoRoute;
}

TANDEM_HD_INLINE uint32_t ndn_fib_lookup(const NdnFibView& v, const uint8_t* name, uint32_t len) {
  uint64_t hash[kMaxComponents + 1];
  uint32_t end[kMaxComponents + 1];
  const int m = ndn_prefix_hashes(name, len, v.max_components, hash, end);
  return m < 0 ? kNoRoute : ndn_fib_resolve(v, name, hash, end, m);
}

}  // namespace tandem::ndn
