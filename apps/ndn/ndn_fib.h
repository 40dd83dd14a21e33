// NDN FIB: longest name-prefix match by hashing (the G-Opt paper's NDN app, after Wang et al.):
// every FIB prefix is stored under the 64-bit hash of its components; a lookup hashes the
// Interest's name prefixes in one pass and probes them from the longest down, so a name of k
// components costs at most k table probes and never a trie walk.
//
// Exact, not probabilistic: each prefix is kept in its TLV wire form (the bytes of its name
// components, as they appear inside an Interest's Name), and a hash hit is confirmed by comparing
// those bytes with the packet's, so a 64-bit hash collision cannot misroute a packet.
//
// Table: partial-key cuckoo hashing (as MemC3/CuckooSwitch), 2 candidate buckets of 8 slots, one
// 64-byte cache line each; a slot holds a 32-bit tag of the hash and the entry's index. The second
// bucket is the first XOR a hash of the tag, so either bucket can be found from the other during
// insertion. Entries (hash, next hop, where the prefix's bytes are) live in a separate array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/ndn/ndn_name.h"
#include "apps/ndn/ndn_tlv.h"
#include "core/compiler.h"

namespace tandem::ndn {

inline constexpr uint32_t kNoRoute = 0xFFFFFFFFu;

// Hash of a name prefix, extended one component at a time: h(k) = combine(h(k-1), component k).
// A component is hashed as its TLV bytes (type, length, value) so that typed components differ.
TANDEM_HD_INLINE uint64_t ndn_hash_step(uint64_t h, const uint8_t* tlv, uint32_t len) {
  uint64_t x = h ^ (uint64_t{len} * 0x9E3779B97F4A7C15ULL);
  uint32_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w = 0;
    for (int b = 0; b < 8; ++b) w |= uint64_t{tlv[i + b]} << (8 * b);
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
inline constexpr uint64_t kNdnHashSeed = 0x6E646E5F66696221ULL;

class NdnFib {
 public:
  enum class Status { kOk, kReplaced, kFull, kTooManyComponents };

  // Room for `capacity` prefixes at up to ~90% of the slots.
  explicit NdnFib(size_t capacity = 1024);

  // Adds or replaces a prefix (a name of up to kMaxComponents components; the empty name is the
  // default route). kFull when no slot can be freed by a bounded cuckoo path: the table is then
  // unchanged.
  Status add(const Name& prefix, uint32_t next_hop);

  // Next hop of the longest FIB prefix of the parsed Interest name in `packet`, or kNoRoute.
  uint32_t lookup(const uint8_t* packet, const NdnName& name) const;
  // The same for a name given as components (control plane, tests).
  uint32_t lookup(const Name& name) const;
  // lookup() for n parsed packets, with every probed bucket prefetched a group ahead.
  void lookup_batch(const uint8_t* const* packets, const NdnName* names, uint32_t* hops, size_t n) const;

  size_t size() const { return entries_.size(); }
  size_t max_components() const { return max_components_; }  // longest prefix stored
  size_t memory_bytes() const { return buckets_.size() * sizeof(Bucket) + entries_.size() * sizeof(Entry) + bytes_.size(); }

  static const char* status_name(Status s);

 private:
  struct alignas(64) Bucket {
    uint32_t tag[8];    // 0: empty
    uint32_t entry[8];  // index into entries_
  };
  struct Entry {
    uint64_t hash;
    uint32_t next_hop;
    uint32_t bytes_offset;  // the prefix's component TLVs in bytes_
    uint32_t bytes_length;
  };
  // The hashes of a name's prefixes of 0..m components and where each prefix ends in the packet.
  struct PrefixHashes {
    uint64_t hash[kMaxComponents + 1];
    uint32_t end[kMaxComponents + 1];
  };
  // Fills `p` for the prefixes the FIB can hold (up to max_components()); returns their count m.
  int prefix_hashes(const uint8_t* packet, const NdnName& name, PrefixHashes& p) const;
  // The longest of those prefixes in the table, probing from m down.
  uint32_t resolve(const uint8_t* packet, const NdnName& name, const PrefixHashes& p, int m) const;
  static uint32_t tag_of(uint64_t h) { return static_cast<uint32_t>(h >> 32) | 1u; }
  size_t bucket1(uint64_t h) const { return static_cast<size_t>(h) & mask_; }
  size_t other_bucket(size_t b, uint32_t tag) const;
  // Index of the entry for (hash, bytes), or -1.
  long find(uint64_t h, const uint8_t* bytes, uint32_t len) const;
  bool place(uint32_t tag, uint32_t entry, size_t b1);
  void grow();

  std::vector<Bucket> buckets_;
  size_t mask_ = 0;
  std::vector<Entry> entries_;
  std::vector<uint8_t> bytes_;
  size_t max_components_ = 0;
};

// A FIB file: `name nexthop` per line, names in the NDN URI form (`/com/example 3`), '#' comments,
// .gz accepted; errors name the file and line. Duplicate names: the later line wins (counted).
struct NdnFibFile {
  std::vector<std::pair<Name, uint32_t>> routes;
  uint64_t lines = 0;
  uint64_t duplicates = 0;
};
// Throws tandem::TableError (core/table_reader.h): "FILE:LINE: what: `line`".
NdnFibFile load_ndn_fib(const std::string& path);

}  // namespace tandem::ndn
