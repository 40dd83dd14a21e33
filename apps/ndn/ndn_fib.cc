#include "apps/ndn/ndn_fib.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/flow_hash.h"
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

size_t NdnFib::other_bucket(size_t b, uint32_t tag) const {
  return (b ^ static_cast<size_t>(mix64(tag))) & mask_;
}

long NdnFib::find(uint64_t h, const uint8_t* bytes, uint32_t len) const {
  const uint32_t tag = tag_of(h);
  const size_t b1 = bucket1(h);
  const size_t bs[2] = {b1, other_bucket(b1, tag)};
  for (size_t b : bs) {
    const Bucket& k = buckets_[b];
    for (int s = 0; s < 8; ++s) {
      if (k.tag[s] != tag) continue;
      const Entry& e = entries_[k.entry[s]];
      if (e.hash == h && e.bytes_length == len && std::memcmp(bytes_.data() + e.bytes_offset, bytes, len) == 0) {
        return static_cast<long>(k.entry[s]);
      }
    }
  }
  return -1;
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

int NdnFib::prefix_hashes(const uint8_t* packet, const NdnName& name, PrefixHashes& p) const {
  const int m = std::min<int>(name.count, static_cast<int>(max_components_));
  p.hash[0] = kNdnHashSeed;
  p.end[0] = name.name_offset;
  for (int i = 0; i < m; ++i) {
    p.end[i + 1] = name.offset[i] + name.length[i];
    p.hash[i + 1] = ndn_hash_step(p.hash[i], packet + p.end[i], p.end[i + 1] - p.end[i]);
  }
  return m;
}

uint32_t NdnFib::resolve(const uint8_t* packet, const NdnName& name, const PrefixHashes& p, int m) const {
  for (int k = m; k >= 0; --k) {
    const long e = find(p.hash[k], packet + name.name_offset, p.end[k] - name.name_offset);
    if (e >= 0) return entries_[e].next_hop;
  }
  return kNoRoute;
}

uint32_t NdnFib::lookup(const uint8_t* packet, const NdnName& name) const {
  PrefixHashes p;
  const int m = prefix_hashes(packet, name, p);
  return resolve(packet, name, p, m);
}

uint32_t NdnFib::lookup(const Name& name) const {
  if (name.size() > static_cast<size_t>(kMaxComponents)) return kNoRoute;
  const std::vector<uint8_t> pkt = encode_interest(name, 0);
  NdnName parsed;
  if (ndn_parse_interest(pkt.data(), static_cast<uint32_t>(pkt.size()), &parsed) != NdnStatus::kOk) return kNoRoute;
  return lookup(pkt.data(), parsed);
}

void NdnFib::lookup_batch(const uint8_t* const* packets, const NdnName* names, uint32_t* hops, size_t n) const {
  // Group prefetching over 8 names: hash every prefix and prefetch both buckets of each, then
  // resolve with the same hashes. A name of k components touches up to 2(k+1) buckets, so a
  // larger group would issue more prefetches than the core keeps in flight.
  constexpr size_t kGroup = 8;
  PrefixHashes p[kGroup];
  int m[kGroup];
  for (size_t base = 0; base < n; base += kGroup) {
    const size_t g = std::min(kGroup, n - base);
    for (size_t j = 0; j < g; ++j) {
      m[j] = prefix_hashes(packets[base + j], names[base + j], p[j]);
      for (int k = 0; k <= m[j]; ++k) {
        const size_t b1 = bucket1(p[j].hash[k]);
        __builtin_prefetch(&buckets_[b1]);
        __builtin_prefetch(&buckets_[other_bucket(b1, tag_of(p[j].hash[k]))]);
      }
    }
    for (size_t j = 0; j < g; ++j) hops[base + j] = resolve(packets[base + j], names[base + j], p[j], m[j]);
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
    uint64_t nh = 0;
    if (!parse_decimal(col[1].view(), 0xFFFFFF, &nh)) in.fail("next hop must be an integer 0..16777215");
    const std::vector<uint8_t> wire = name_wire_bytes(name);
    std::string key(wire.begin(), wire.end());
    if (auto it = seen.find(key); it != seen.end()) {
      ++f.duplicates;
      f.routes[it->second].second = static_cast<uint32_t>(nh);
      continue;
    }
    seen.emplace(std::move(key), f.routes.size());
    f.routes.emplace_back(std::move(name), static_cast<uint32_t>(nh));
  }
  f.lines = in.line_number();
  return f;
}

}  // namespace tandem::ndn
