// Flow identity and hashing. The hash decides which worker queue (and, later, which device shard)
// a packet goes to, so all packets of one flow must hash alike on host and device.
#pragma once

#include "core/compiler.h"

namespace tandem {

// A 5-tuple. IPv4 addresses occupy bytes 0..3 of src/dst (network order), bytes 4..15 are zero.
// Ports are host order; they are 0 for protocols without ports and for non-first fragments.
struct FiveTuple {
  uint8_t src[16];
  uint8_t dst[16];
  uint16_t src_port;
  uint16_t dst_port;
  uint8_t proto;       // IPPROTO_* of the transport header (after IPv6 extension headers)
  uint8_t ip_version;  // 4 or 6
};

TANDEM_HD_INLINE uint64_t mix64(uint64_t x) {
  // MurmurHash3 / SplitMix finalizer: full avalanche, cheap on CPU and GPU.
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

TANDEM_HD_INLINE uint64_t load_le64(const uint8_t* p) {
#if defined(__CUDA_ARCH__) || !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
#else
  // A little-endian host: one unaligned load (the byte loop is not always merged into one, and
  // then costs most of the hash).
  uint64_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
#endif
}

TANDEM_HD_INLINE uint32_t load_le32(const uint8_t* p) {
#if defined(__CUDA_ARCH__) || !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
#else
  uint32_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
#endif
}

// Flow hash of a 5-tuple. Deterministic across runs, platforms and host/device.
TANDEM_HD_INLINE uint32_t flow_hash(const FiveTuple& t) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(t.ip_version) << 8) ^ t.proto;
  if (t.ip_version == 4) {
    // Bytes 4..7 of an IPv4 tuple's addresses are zero: the same value as the 8-byte load, read
    // as the parser wrote it (4 bytes), so the load is forwarded from that store rather than
    // waiting for it to reach the cache (a load spanning two stores is not forwarded).
    h = mix64(h ^ load_le32(t.src));
    h = mix64(h ^ load_le32(t.dst));
  } else {
    h = mix64(h ^ load_le64(t.src));
    h = mix64(h ^ load_le64(t.dst));
  }
  if (t.ip_version == 6) {
    h = mix64(h ^ load_le64(t.src + 8));
    h = mix64(h ^ load_le64(t.dst + 8));
  }
  h = mix64(h ^ ((static_cast<uint64_t>(t.src_port) << 16) | t.dst_port));
  return static_cast<uint32_t>(h ^ (h >> 32));
}

}  // namespace tandem
