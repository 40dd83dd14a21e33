#include "apps/ndn/ndn_fib.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/flow_hash.h"
#include "core/batch.h"
#include "core/table_reader.h"

namespace tandem::ndn {

namespace {

constexpr int kMaxKicks = 256;

}  // namespace

const char* NdnFib::status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kReplaced: return "replaced";
    case Status::kFull: return "table full";
    case Status::kTooManyComponents: return "too many components";
  }
  return "?";
}

NdnFib::NdnFib(size_t capacity) {
  size_t nb = 1;
  while (nb * 8 * 9 / 10 < capacity) nb *= 2;
  buckets_.assign(nb, Bucket{});
  mask_ = nb - 1;
}

bool NdnFib::place(uint32_t tag, uint32_t entry, size_t b1) {
  size_t b = b1;
  uint64_t walk = mix64(entry);  // a deterministic "random" walk
  for (int kick = 0; kick <= kMaxKicks; ++kick) {
    for (size_t cand : {b, other_bucket(b, tag)}) {
      Bucket& k = buckets_[cand];
      for (int s = 0; s < 8; ++s) {
        if (k.tag[s] == 0) {
          k.tag[s] = tag;
          k.entry[s] = entry;
          return true;
        }
      }
    }
    // Both full: evict a slot of one of them and carry its entry on to its other bucket.
    walk = mix64(walk);
    const size_t victim_bucket = (walk & 1) ? b : other_bucket(b, tag);
    Bucket& k = buckets_[victim_bucket];
    const int s = static_cast<int>((walk >> 1) & 7);
    std::swap(tag, k.tag[s]);
    std::swap(entry, k.entry[s]);
    b = other_bucket(victim_bucket, tag);
  }
  // The entry in hand (maybe another one by now) has no slot: the caller rebuilds bigger. Every
  // entry is still in entries_, so nothing is lost.
  return false;
}

void NdnFib::grow() {
  for (size_t nb = buckets_.size() * 2;; nb *= 2) {
    buckets_.assign(nb, Bucket{});
    mask_ = nb - 1;
    bool ok = true;
    for (uint32_t i = 0; i < entries_.size() && ok; ++i) ok = place(tag_of(entries_[i].hash), i, bucket1(entries_[i].hash));
    if (ok) return;
  }
}

NdnFib::Status NdnFib::add(const Name& prefix, uint32_t next_hop) {
  if (prefix.size() > static_cast<size_t>(kMaxComponents)) return Status::kTooManyComponents;
  std::vector<uint32_t> ends;
  const std::vector<uint8_t> wire = name_wire_bytes(prefix, &ends);
  uint64_t h = kNdnHashSeed;
  for (size_t i = 0, start = 0; i < ends.size(); start = ends[i++]) {
    h = ndn_hash_step(h, wire.data() + start, static_cast<uint32_t>(ends[i] - start));
  }
  ++version_;
  if (const long e = find(h, wire.data(), static_cast<uint32_t>(wire.size())); e >= 0) {
    entries_[e].next_hop = next_hop;
    return Status::kReplaced;
  }
  if (entries_.size() >= 0xFFFFFFFFu || bytes_.size() + wire.size() > 0xFFFFFFFFu) return Status::kFull;
  const uint32_t idx = static_cast<uint32_t>(entries_.size());
  entries_.push_back({h, next_hop, static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(wire.size())});
  bytes_.insert(bytes_.end(), wire.begin(), wire.end());
  max_components_ = std::max(max_components_, prefix.size());
  if (entries_.size() > buckets_.size() * 8 * 9 / 10 || !place(tag_of(h), idx, bucket1(h))) grow();
  return Status::kOk;
}

uint32_t NdnFib::lookup(const Name& name) const {
  if (name.size() > static_cast<size_t>(kMaxComponents)) return kNoRoute;
  const std::vector<uint8_t> wire = name_wire_bytes(name);
  return lookup_name(wire.data(), static_cast<uint32_t>(wire.size()));
}

void NdnFib::lookup_batch(const uint8_t* const* names, const uint32_t* lens, uint32_t* hops, size_t n) const {
  // A hit is three dependent reads: the bucket (tags), the entry (hash, next hop, where the bytes
  // are), the prefix's bytes. Group prefetching walks a group of names through them in stages, so
  // each stage's misses overlap across the group: hash every prefix and prefetch the buckets of the
  // two longest (where a FIB of real names' prefixes finds most matches: the probes go from the
  // longest down and stop at the first hit); then prefetch the entries their matching tags point
  // to; then the bytes of the entries whose 64-bit hash matches; then resolve.
  constexpr size_t kGroup = 16;
  constexpr int kAhead = 2;  // prefixes per name whose chain is prefetched
  const NdnFibView v = view();
  uint64_t hash[kGroup][kMaxComponents + 1];
  uint32_t end[kGroup][kMaxComponents + 1];
  int m[kGroup];
  // Calls f(j, k, entry index) for each slot of prefix k's two buckets whose tag matches.
  auto each_tag_match = [&](size_t j, int k, auto&& f) {
    const uint64_t h = hash[j][k];
    const uint32_t tag = tag_of(h);
    const size_t b1 = bucket1(h);
    for (size_t b : {b1, other_bucket(b1, tag)}) {
      const Bucket& bk = buckets_[b];
      for (int s = 0; s < 8; ++s) {
        if (bk.tag[s] == tag) f(j, k, bk.entry[s]);
      }
    }
  };
  for (size_t base = 0; base < n; base += kGroup) {
    const size_t g = std::min(kGroup, n - base);
    for (size_t j = 0; j < g; ++j) {
      m[j] = ndn_prefix_hashes(names[base + j], lens[base + j], v.max_components, hash[j], end[j]);
      for (int k = m[j]; k >= 0 && k > m[j] - kAhead; --k) {
        const size_t b1 = bucket1(hash[j][k]);
        __builtin_prefetch(&buckets_[b1]);
        __builtin_prefetch(&buckets_[other_bucket(b1, tag_of(hash[j][k]))]);
      }
    }
    for (size_t j = 0; j < g; ++j) {
      for (int k = m[j]; k >= 0 && k > m[j] - kAhead; --k) {
        each_tag_match(j, k, [&](size_t, int, uint32_t e) { __builtin_prefetch(&entries_[e]); });
      }
    }
    for (size_t j = 0; j < g; ++j) {
      for (int k = m[j]; k >= 0 && k > m[j] - kAhead; --k) {
        each_tag_match(j, k, [&](size_t jj, int kk, uint32_t e) {
          const Entry& en = entries_[e];
          if (en.hash != hash[jj][kk]) return;
          const uint8_t* p = bytes_.data() + en.bytes_offset;
          for (uint32_t off = 0; off < en.bytes_length; off += 64) __builtin_prefetch(p + off);
        });
      }
    }
    for (size_t j = 0; j < g; ++j) {
      hops[base + j] = m[j] < 0 ? kNoRoute : ndn_fib_resolve(v, names[base + j], hash[j], end[j], m[j]);
    }
  }
}

void NdnFib::lookup_batch(const uint8_t* const* packets, const NdnName* parsed, uint32_t* hops, size_t n) const {
  constexpr size_t kChunk = 256;
  const uint8_t* names[kChunk];
  uint32_t lens[kChunk];
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t c = std::min(kChunk, n - base);
    for (size_t j = 0; j < c; ++j) {
      names[j] = packets[base + j] + parsed[base + j].name_offset;
      lens[j] = parsed[base + j].name_length;
    }
    lookup_batch(names, lens, hops + base, c);
  }
}

NdnFibFile load_ndn_fib(const std::string& path) {
  NdnFibFile f;
  std::unordered_map<std::string, size_t> seen;
  TableReader in(path);
  TableReader::Column col[2];
  for (int n; (n = in.next(col, 2, "too many columns (expected NAME NEXTHOP)")) > 0;) {
    if (n != 2) in.fail("missing next hop (expected NAME NEXTHOP)");
    Name name;
    try {
      name = parse_uri(col[0].view());
    } catch (const NameError& e) {
      in.fail(e.what());
    }
    if (name.size() > static_cast<size_t>(kMaxComponents)) {
      in.fail("name has " + std::to_string(name.size()) + " components (at most " + std::to_string(kMaxComponents) + ")");
    }
    const uint32_t nh = read_next_hop(in, col[1].view());
    const std::vector<uint8_t> wire = name_wire_bytes(name);
    std::string key(wire.begin(), wire.end());
    if (auto it = seen.find(key); it != seen.end()) {
      f.duplicates.add(in, f.routes[it->second].second != nh);
      f.routes[it->second].second = nh;
      continue;
    }
    seen.emplace(std::move(key), f.routes.size());
    f.routes.emplace_back(std::move(name), nh);
  }
  f.lines = in.line_number();
  return f;
}

}  // namespace tandem::ndn
