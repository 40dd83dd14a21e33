#include "apps/ipv6/lpm6.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/byte_order.h"
#include "core/flow_hash.h"

namespace tandem::ipv6 {

using E = Lpm6Entry;

namespace {

constexpr size_t kChunkBytes = size_t{Lpm6::kGroupsPerChunk} * Lpm6::kGroupEntries * sizeof(uint32_t);

// Level 0 is tbl24; level k >= 1 is the tbl8 level reached after k groups, indexed by byte 2 + k.
// A slot of level k stands for a prefix of length end(k); a route belongs to the level where
// base(k) < depth <= end(k) (::/0 to level 0).
constexpr int level_base(int level) { return level == 0 ? 0 : 16 + 8 * level; }
constexpr int level_end(int level) { return level == 0 ? 24 : 24 + 8 * level; }
constexpr int level_of_depth(int depth) { return depth <= 24 ? 0 : (depth - 17) / 8; }
static_assert(level_of_depth(25) == 1 && level_of_depth(32) == 1 && level_of_depth(33) == 2);
static_assert(level_of_depth(128) == kMaxTbl8Levels && level_end(kMaxTbl8Levels) == 128);

uint32_t slot_index(const uint8_t* addr, int level) {
  return level == 0 ? lpm6_tbl24_index(addr) : addr[kTbl24Bytes - 1 + level];
}

// Stores an entry for readers on other threads: whole (one 32-bit store), and after the stores that
// filled the group it may point to (release).
void publish(uint32_t* slot, uint32_t entry) { __atomic_store_n(slot, entry, __ATOMIC_RELEASE); }

}  // namespace

Lpm6::Reservation::~Reservation() {
  if (map) munmap(map, bytes);
}

Lpm6::Lpm6(uint32_t max_groups)
    : tbl24_mem_(size_t{kTbl24Entries} * sizeof(uint32_t)),
      max_groups_(std::clamp<uint32_t>(max_groups, 1, kMaxGroups)) {
  tbl24_ = static_cast<uint32_t*>(tbl24_mem_.data());  // zero-filled: every entry invalid
  // Whole chunks, plus one hugepage of slack for the alignment.
  for (;;) {
    const size_t chunks = (max_groups_ + kGroupsPerChunk - 1) / kGroupsPerChunk;
    const size_t bytes = (chunks + 1) * kChunkBytes;
    void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map != MAP_FAILED) {
      tbl8_reserved_.map = map;
      tbl8_reserved_.bytes = bytes;
      break;
    }
    if (max_groups_ <= kGroupsPerChunk) {
      throw std::runtime_error("cannot reserve address space for IPv6 tbl8 groups: " +
                               std::string(std::strerror(errno)));
    }
    max_groups_ /= 2;
  }
  const auto base = reinterpret_cast<uintptr_t>(tbl8_reserved_.map);
  tbl8_ = reinterpret_cast<uint32_t*>((base + kChunkBytes - 1) & ~uintptr_t{kChunkBytes - 1});
  madvise(tbl8_, tbl8_reserved_.bytes - kChunkBytes, MADV_HUGEPAGE);  // advisory, as HugeRegion
}

const char* Lpm6::status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kBadDepth: return "prefix length must be 0..128";
    case Status::kBadNextHop: return "next hop must be < 2^24";
    case Status::kNoTbl8Space: return "out of tbl8 groups";
    case Status::kNotFound: return "no such prefix";
  }
  return "unknown";
}

size_t Lpm6::memory_bytes() const {
  return tbl24_mem_.size() + size_t{capacity_} * kGroupEntries * sizeof(uint32_t);
}

size_t Lpm6::memory_bytes_in_use() const {
  return size_t{kTbl24Entries} * sizeof(uint32_t) + size_t{groups_in_use()} * kGroupEntries * sizeof(uint32_t);
}

size_t Lpm6::PrefixKeyHash::operator()(const PrefixKey& k) const {
  return static_cast<size_t>(mix64(k.hi ^ mix64(k.lo)));
}

Lpm6::PrefixKey Lpm6::key_of(const uint8_t* prefix) {
  return PrefixKey{load_be64(prefix), load_be64(prefix + 8)};
}

// Makes sure `needed` more groups can be allocated, touching more of the reserved pool if needed
// (whole 2 MiB chunks, zero-filled by the kernel, faulted in here rather than on first use); false
// only at the cap. tbl8 never moves.
bool Lpm6::reserve_groups(uint32_t needed) {
  const uint64_t available = free_groups_.size() + (capacity_ - high_water_);
  if (available >= needed) return true;
  const uint64_t want = uint64_t{high_water_} + (needed - free_groups_.size());
  if (want > max_groups_) return false;
  const uint64_t rounded = (want + kGroupsPerChunk - 1) / kGroupsPerChunk * kGroupsPerChunk;
  const uint32_t new_capacity = static_cast<uint32_t>(std::min<uint64_t>(rounded, max_groups_));
  std::memset(group(capacity_), 0, size_t{new_capacity - capacity_} * kGroupEntries * sizeof(uint32_t));
  capacity_ = new_capacity;
  return true;
}

uint32_t Lpm6::alloc_group() {
  if (!free_groups_.empty()) {
    const uint32_t g = free_groups_.back();
    free_groups_.pop_back();
    return g;
  }
  assert(high_water_ < capacity_);  // reserve_groups ran first
  return high_water_++;
}

void Lpm6::free_group(uint32_t g) { free_groups_.push_back(g); }

// Turns a plain slot into an extended one: the new group's 256 slots all take what the slot
// resolved to, as their background (code 0), and the extended entry keeps the slot's code for it.
void Lpm6::extend(uint32_t* slot) {
  const uint32_t e = *slot;
  assert(!E::ext(e));
  const uint32_t g = alloc_group();
  const uint32_t fill = E::valid(e) ? E::make(E::value(e), 0) : 0;
  std::fill_n(group(g), kGroupEntries, fill);
  publish(slot, E::make_ext(g, E::valid(e) ? E::code(e) : 0));
}

// Gives group g, and the groups below it that share its background, a new background entry (a
// code-0 entry, or 0 for none). Slots owned by longer routes keep theirs.
void Lpm6::set_background(uint32_t g, uint32_t background) {
  uint32_t* slots = group(g);
  for (uint32_t j = 0; j < kGroupEntries; ++j) {
    const uint32_t e = slots[j];
    if (!E::ext(e)) {
      if (!E::valid(e) || E::code(e) == 0) publish(&slots[j], background);
    } else if (E::code(e) == 0) {
      set_background(E::value(e), background);
    }
  }
}

Lpm6::Status Lpm6::add(const uint8_t prefix[16], uint8_t depth, uint32_t next_hop) {
  if (depth > 128) return Status::kBadDepth;
  if (next_hop > kMaxNextHop) return Status::kBadNextHop;
  Addr6 p;
  lpm6_mask(prefix, depth, p.data());
  const int level = level_of_depth(depth);

  // Count the groups the path is missing first, so that running out changes nothing.
  uint32_t missing = 0;
  const uint32_t* walk = tbl24_;
  for (int l = 0; l < level; ++l) {
    const uint32_t e = walk[slot_index(p.data(), l)];
    if (!E::ext(e)) {
      missing = static_cast<uint32_t>(level - l);
      break;
    }
    walk = group(E::value(e));
  }
  if (!reserve_groups(missing)) return Status::kNoTbl8Space;

  uint32_t* slots = tbl24_;
  for (int l = 0; l < level; ++l) {
    uint32_t* slot = &slots[slot_index(p.data(), l)];
    if (!E::ext(*slot)) extend(slot);
    slots = group(E::value(*slot));
  }

  // Write the range: every slot whose route is not longer than this one.
  const uint32_t code = static_cast<uint32_t>(depth - level_base(level));
  const uint32_t entry = E::make(next_hop, code);
  const uint32_t first = slot_index(p.data(), level);
  const uint32_t count = 1u << (level_end(level) - depth);
  for (uint32_t s = first; s < first + count; ++s) {
    const uint32_t e = slots[s];
    if (!E::ext(e)) {
      if (!E::valid(e) || E::code(e) <= code) publish(&slots[s], entry);
    } else if (E::code(e) <= code) {
      // This route is now the longest one covering the whole group: its background.
      set_background(E::value(e), E::make(next_hop, 0));
      publish(&slots[s], E::make_ext(E::value(e), code));
    }
  }

  auto [it, inserted] = rules_[depth].insert_or_assign(key_of(p.data()), next_hop);
  (void)it;
  if (inserted) ++rule_count_;
  ++version_;
  return Status::kOk;
}

// The next hop and depth of the longest rule covering `prefix` that is shorter than `below_depth`.
bool Lpm6::find_covering(const uint8_t* prefix, int below_depth, uint32_t* next_hop, int* depth) const {
  Addr6 p;
  for (int d = below_depth - 1; d >= 0; --d) {
    if (rules_[d].empty()) continue;
    lpm6_mask(prefix, static_cast<unsigned>(d), p.data());
    auto it = rules_[d].find(key_of(p.data()));
    if (it != rules_[d].end()) {
      *next_hop = it->second;
      *depth = d;
      return true;
    }
  }
  return false;
}

Lpm6::Status Lpm6::remove(const uint8_t prefix[16], uint8_t depth) {
  if (depth > 128) return Status::kBadDepth;
  Addr6 p;
  lpm6_mask(prefix, depth, p.data());
  auto it = rules_[depth].find(key_of(p.data()));
  if (it == rules_[depth].end()) return Status::kNotFound;
  rules_[depth].erase(it);
  --rule_count_;
  ++version_;

  // The path exists: adding the rule extended it, and groups are only folded once empty of
  // longer routes. Keep the slot of each level that points to the next, for folding afterwards.
  const int level = level_of_depth(depth);
  uint32_t* path[kMaxTbl8Levels + 1];
  uint32_t* slots = tbl24_;
  for (int l = 0; l < level; ++l) {
    path[l] = &slots[slot_index(p.data(), l)];
    assert(E::ext(*path[l]));
    slots = group(E::value(*path[l]));
  }

  // What the deleted route's slots fall back to, coded for this level, and as a background below.
  const int base = level_base(level);
  uint32_t cover_hop = 0;
  int cover_depth = 0;
  const bool covered = find_covering(p.data(), depth, &cover_hop, &cover_depth);
  const uint32_t cover_code = covered && cover_depth > base ? static_cast<uint32_t>(cover_depth - base) : 0;
  const uint32_t replacement = covered ? E::make(cover_hop, cover_code) : 0;
  const uint32_t background_below = covered ? E::make(cover_hop, 0) : 0;

  const uint32_t code = static_cast<uint32_t>(depth - base);
  const uint32_t first = slot_index(p.data(), level);
  const uint32_t count = 1u << (level_end(level) - depth);
  for (uint32_t s = first; s < first + count; ++s) {
    const uint32_t e = slots[s];
    if (!E::ext(e)) {
      // Only the deleted route has this depth here; a shorter one cannot be inside its range.
      if (E::valid(e) && E::code(e) == code) publish(&slots[s], replacement);
    } else if (E::code(e) == code) {
      set_background(E::value(e), background_below);
      publish(&slots[s], E::make_ext(E::value(e), cover_code));
    }
  }

  // Fold groups that now hold only their background back into the slot above, up the path (the
  // groups inside the range kept their longer routes, so only the path can become foldable).
  for (int l = level; l >= 1; --l) {
    uint32_t* above = path[l - 1];
    const uint32_t g = E::value(*above);
    const uint32_t* grp = group(g);
    const uint32_t only = grp[0];
    if (E::ext(only) || (E::valid(only) && E::code(only) != 0)) break;
    if (!std::all_of(grp + 1, grp + kGroupEntries, [only](uint32_t e) { return e == only; })) break;
    publish(above, E::valid(only) ? E::make(E::value(only), E::code(*above)) : 0);
    free_group(g);
  }
  return Status::kOk;
}

// ---- lookups ----

const char* lpm6_lookup_name(Lpm6Lookup kind) {
  switch (kind) {
    case Lpm6Lookup::kWindow: return "window";
    case Lpm6Lookup::kAvx512: return "avx512";
  }
  return "?";
}

Lpm6Lookup default_lookup() { return lpm6_avx512_supported() ? Lpm6Lookup::kAvx512 : Lpm6Lookup::kWindow; }

bool Lpm6::select_lookup(Lpm6Lookup kind) {
  if (kind == Lpm6Lookup::kAvx512 && !lpm6_avx512_supported()) return false;
  lookup_kind_ = kind;
  return true;
}

void Lpm6::lookup_batch(const uint8_t (*addrs)[16], uint32_t* hops, size_t n) const {
  if (lookup_kind_ == Lpm6Lookup::kAvx512) return lpm6_lookup_avx512(*this, addrs, hops, n);
  lpm6_lookup_window(*this, addrs, hops, n, kBatchWindow);
}

namespace {

template <uint32_t W>
void lookup_window(const uint32_t* tbl24, const uint32_t* tbl8, const uint8_t (*addrs)[16],
                   uint32_t* hops, size_t n) {
  // Per lookup in flight: the slot it prefetched, and the address byte its next group is indexed
  // by, which also says which address it is: it lies 3..16 bytes into its 16-byte row.
  const uint32_t* slot[W];
  const uint8_t* byte[W];
  size_t next = 0;
  uint32_t live = 0;
  auto start = [&](uint32_t w) {
    byte[w] = addrs[next] + kTbl24Bytes;
    slot[w] = &tbl24[lpm6_tbl24_index(addrs[next])];
    prefetch_read(slot[w]);
    ++next;
  };
  while (live < W && next < n) start(live++);
  while (live > 0) {
    for (uint32_t w = 0; w < live;) {
      const uint32_t e = *slot[w];
      if (E::ext(e)) {
        slot[w] = &tbl8[lpm6_tbl8_index(e, *byte[w]++)];
        prefetch_read(slot[w]);
        ++w;
        continue;
      }
      hops[static_cast<size_t>(byte[w] - addrs[0] - 1) / 16] = lpm6_result(e);
      if (next < n) {
        start(w);
        ++w;
      } else {  // the tail: keep the window dense, so each pass still finds work in flight
        --live;
        slot[w] = slot[live];
        byte[w] = byte[live];
      }
    }
  }
}

}  // namespace

void lpm6_lookup_window(const Lpm6& t, const uint8_t (*addrs)[16], uint32_t* hops, size_t n,
                        uint32_t window) {
  const uint32_t* t24 = t.tbl24();
  const uint32_t* t8 = t.tbl8();
  if (window <= 4) return lookup_window<4>(t24, t8, addrs, hops, n);
  if (window <= 8) return lookup_window<8>(t24, t8, addrs, hops, n);
  if (window <= 16) return lookup_window<16>(t24, t8, addrs, hops, n);
  if (window <= 32) return lookup_window<32>(t24, t8, addrs, hops, n);
  if (window <= 64) return lookup_window<64>(t24, t8, addrs, hops, n);
  if (window <= 128) return lookup_window<128>(t24, t8, addrs, hops, n);
  return lookup_window<256>(t24, t8, addrs, hops, n);
}

}  // namespace tandem::ipv6
