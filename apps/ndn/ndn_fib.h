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

#include "apps/ndn/ndn_fib_core.h"
#include "apps/ndn/ndn_name.h"
#include "apps/ndn/ndn_tlv.h"
#include "core/compiler.h"
#include "core/table_reader.h"

namespace tandem::ndn {

class NdnFib {
 public:
  enum class Status { kOk, kReplaced, kFull, kTooManyComponents };

  // Room for `capacity` prefixes at up to ~90% of the slots.
  explicit NdnFib(size_t capacity = 1024);

  // Adds or replaces a prefix (a name of up to kMaxComponents components; the empty name is the
  // default route). kFull when no slot can be freed by a bounded cuckoo path: the table is then
  // unchanged.
  Status add(const Name& prefix, uint32_t next_hop);

  // Next hop of the longest FIB prefix of a name given as its Name TLV's value (the component
  // TLVs, as in a packet), or kNoRoute (also for malformed component TLVs).
  uint32_t lookup_name(const uint8_t* name, uint32_t len) const { return ndn_fib_lookup(view(), name, len); }
  // The same for the parsed Interest name in `packet`.
  uint32_t lookup(const uint8_t* packet, const NdnName& name) const {
    return lookup_name(packet + name.name_offset, name.name_length);
  }
  // The same for a name given as components (control plane, tests).
  uint32_t lookup(const Name& name) const;
  // lookup_name() for n names, with every probed bucket of a group of names prefetched before the
  // group is resolved.
  void lookup_batch(const uint8_t* const* names, const uint32_t* lens, uint32_t* hops, size_t n) const;
  // The same for n parsed packets.
  void lookup_batch(const uint8_t* const* packets, const NdnName* names, uint32_t* hops, size_t n) const;

  // The arrays the lookup reads (valid until the next add()): what the GPU copy is made of.
  NdnFibView view() const {
    return {buckets_.data(), mask_, entries_.data(), bytes_.data(), static_cast<int>(max_components_)};
  }
  size_t bucket_count() const { return buckets_.size(); }
  size_t bytes_size() const { return bytes_.size(); }
  uint64_t version() const { return version_; }

  size_t size() const { return entries_.size(); }
  size_t max_components() const { return max_components_; }  // longest prefix stored
  size_t memory_bytes() const { return buckets_.size() * sizeof(Bucket) + entries_.size() * sizeof(Entry) + bytes_.size(); }

  static const char* status_name(Status s);

 private:
  using Bucket = NdnFibBucket;
  using Entry = NdnFibEntry;
  static uint32_t tag_of(uint64_t h) { return ndn_tag_of(h); }
  size_t bucket1(uint64_t h) const { return static_cast<size_t>(ndn_bucket1(h, mask_)); }
  size_t other_bucket(size_t b, uint32_t tag) const { return static_cast<size_t>(ndn_other_bucket(b, tag, mask_)); }
  // Index of the entry for (hash, bytes), or -1.
  long find(uint64_t h, const uint8_t* bytes, uint32_t len) const { return ndn_fib_find(view(), h, bytes, len); }
  bool place(uint32_t tag, uint32_t entry, size_t b1);
  void grow();

  std::vector<Bucket> buckets_;
  size_t mask_ = 0;
  std::vector<Entry> entries_;
  std::vector<uint8_t> bytes_;
  size_t max_components_ = 0;
  uint64_t version_ = 0;
};

// A FIB file: `name nexthop` per line, names in the NDN URI form (`/com/example 3`), '#' comments,
// .gz accepted; errors name the file and line. Duplicate names: the later line wins (counted).
struct NdnFibFile {
  std::vector<std::pair<Name, uint32_t>> routes;
  uint64_t lines = 0;
  DuplicateKeys duplicates;  // names given again (the last line wins)
};
// Throws tandem::TableError (core/table_reader.h): "FILE:LINE: what: `line`".
NdnFibFile load_ndn_fib(const std::string& path);

}  // namespace tandem::ndn
