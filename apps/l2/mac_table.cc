#include "apps/l2/mac_table.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tandem::l2 {

namespace {

// Buckets for `capacity` entries at `max_load`: a power of two, at least 2 (so that the two hashes
// can name different buckets).
uint64_t buckets_for(size_t capacity, double max_load) {
  const double needed = std::ceil(static_cast<double>(capacity) / (max_load * kSlotsPerBucket));
  if (!(needed < 0x1p40)) throw std::invalid_argument("MacTable: capacity too large");
  uint64_t buckets = 2;
  while (static_cast<double>(buckets) < needed) buckets <<= 1;
  return buckets;
}

// Index of the slot of `bucket` that holds `mac`, or -1.
int find_in_bucket(const uint64_t* bucket, uint64_t mac) {
  const uint64_t want = mac << 16;
  for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    if ((bucket[s] ^ want) - 1 < 0xFFFFu) return static_cast<int>(s);
  }
  return -1;
}

double checked_load(double max_load) {
  if (!(max_load > 0.0 && max_load <= 1.0)) {
    throw std::invalid_argument("MacTable: max_load must be in (0, 1], not " + std::to_string(max_load));
  }
  return max_load;
}

}  // namespace

MacTable::MacTable(size_t capacity, double max_load)
    : MacTable(Buckets{buckets_for(capacity, checked_load(max_load))}, max_load) {}

MacTable::MacTable(Buckets buckets, double max_load) {
  max_load_ = max_load;
  mem_ = HugeRegion(buckets.count * kCacheLine);  // zero-filled: every slot empty (kEmptySlot == 0)
  slots_ = static_cast<uint64_t*>(mem_.data());
  mask_ = buckets.count - 1;
  capacity_ = static_cast<size_t>(static_cast<double>(slot_count()) * max_load);
}

std::unique_ptr<MacTable> MacTable::clone() const {
  std::unique_ptr<MacTable> c(new MacTable(Buckets{bucket_count()}, max_load_));
  std::memcpy(c->slots_, slots_, memory_bytes());
  c->size_ = size_;
  c->version_ = version_;
  c->cuckoo_moves_ = cuckoo_moves_;
  c->longest_path_ = longest_path_;
  return c;
}

const char* MacTable::status_name(Status s) {
  switch (s) {
    case Status::kInserted: return "inserted";
    case Status::kUpdated: return "updated";
    case Status::kFull: return "table full";
    case Status::kBadMac: return "bad MAC";
    case Status::kBadPort: return "bad port";
  }
  return "?";
}

// ---- control plane (one writer) ----

void MacTable::store(uint64_t index, uint64_t value) {
  // One 64-bit store per slot change, so that lock-free readers never see half an entry.
  std::atomic_ref<uint64_t>(slots_[index]).store(value, std::memory_order_relaxed);
  if (change_log_) change_log_->push_back(index);
}

int MacTable::free_slot(uint64_t bucket) const {
  const uint64_t* b = mac_bucket(slots_, bucket);
  for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    if (mac_slot_empty(b[s])) return static_cast<int>(s);
  }
  return -1;
}

// The bucket an entry stored in `bucket` would move to. Equal to `bucket` when both hashes of its
// MAC name the same bucket (it cannot move).
uint64_t MacTable::other_bucket(uint64_t slot_value, uint64_t bucket) const {
  const uint64_t mac = mac_slot_mac(slot_value);
  const uint64_t b1 = mac_hash1(mac) & mask_;
  return b1 != bucket ? b1 : mac_hash2(mac) & mask_;
}

bool MacTable::find_cuckoo_path(uint64_t b1, uint64_t b2, PathStep* path, uint32_t* len) const {
  // Breadth-first over buckets: a node is a full bucket, reached by moving the entry in slot
  // `slot_in_parent` of its parent bucket; the roots are the new MAC's two buckets (depth 0).
  // BFS finds a shortest path, so the fewest entries move (and readers retry least).
  struct Node {
    uint64_t bucket;
    int32_t parent;
    uint8_t slot_in_parent;
    uint8_t depth;
  };
  Node queue[kMaxSearchBuckets + 2];
  uint32_t tail = 0;
  queue[tail++] = {b1, -1, 0, 0};
  if (b2 != b1) queue[tail++] = {b2, -1, 0, 0};
  uint32_t examined = 0;
  for (uint32_t head = 0; head < tail; ++head) {
    const Node node = queue[head];
    const uint64_t* bucket = mac_bucket(slots_, node.bucket);
    for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
      if (mac_slot_empty(bucket[s])) continue;  // not reached: only full buckets are queued
      const uint64_t alt = other_bucket(bucket[s], node.bucket);
      if (alt == node.bucket) continue;
      // A bucket twice on one path would have its slot re-filled before its own entry moved out.
      bool on_path = false;
      for (int32_t i = static_cast<int32_t>(head); i >= 0 && !on_path; i = queue[i].parent) {
        on_path = queue[i].bucket == alt;
      }
      if (on_path) continue;
      if (++examined > kMaxSearchBuckets) return false;
      const int free = free_slot(alt);
      if (free >= 0) {
        const uint32_t moves = node.depth + 1u;
        path[moves] = {alt, static_cast<uint32_t>(free)};
        path[node.depth] = {node.bucket, s};
        for (int32_t i = static_cast<int32_t>(head); queue[i].parent >= 0; i = queue[i].parent) {
          path[queue[i].depth - 1] = {queue[queue[i].parent].bucket, queue[i].slot_in_parent};
        }
        *len = moves;
        return true;
      }
      if (node.depth + 1u < kMaxPathLength && tail < kMaxSearchBuckets + 2) {
        queue[tail++] = {alt, static_cast<int32_t>(head), static_cast<uint8_t>(s),
                         static_cast<uint8_t>(node.depth + 1)};
      }
    }
  }
  return false;
}

MacTable::Status MacTable::insert(uint64_t mac, uint32_t port) {
  if (mac > kMacMask) return Status::kBadMac;
  if (port > kMaxPort) return Status::kBadPort;
  const uint64_t entry = mac_slot_make(mac, port);
  const uint64_t b1 = mac_hash1(mac) & mask_;
  const uint64_t b2 = mac_hash2(mac) & mask_;
  for (const uint64_t b : {b1, b2}) {
    const int s = find_in_bucket(mac_bucket(slots_, b), mac);
    if (s < 0) continue;
    const uint64_t index = b * kSlotsPerBucket + static_cast<uint64_t>(s);
    // Re-learning the same port on every frame must not dirty the line readers share.
    if (slots_[index] != entry) {
      store(index, entry);
      ++version_;
    }
    return Status::kUpdated;
  }
  for (const uint64_t b : {b1, b2}) {
    const int s = free_slot(b);
    if (s < 0) continue;
    store(b * kSlotsPerBucket + static_cast<uint64_t>(s), entry);
    ++size_;
    ++version_;
    return Status::kInserted;
  }
  PathStep path[kMaxPathLength + 1];
  uint32_t len = 0;
  if (!find_cuckoo_path(b1, b2, path, &len)) return Status::kFull;
  // Apply from the end (see the header): copy each entry into the slot after it before its own
  // slot is overwritten, so no key is ever absent; the new entry goes in last. Readers that miss
  // while move_seq_ is odd or has changed retry.
  const uint64_t seq = move_seq_.load(std::memory_order_relaxed);
  move_seq_.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  auto index = [](const PathStep& p) { return p.bucket * kSlotsPerBucket + p.slot; };
  for (uint32_t i = len; i-- > 0;) store(index(path[i + 1]), slots_[index(path[i])]);
  store(index(path[0]), entry);
  move_seq_.store(seq + 2, std::memory_order_release);
  ++size_;
  ++version_;
  cuckoo_moves_ += len;
  longest_path_ = std::max(longest_path_, len);
  return Status::kInserted;
}

bool MacTable::erase(uint64_t mac) {
  if (mac > kMacMask) return false;
  for (const uint64_t b : {mac_hash1(mac) & mask_, mac_hash2(mac) & mask_}) {
    const int s = find_in_bucket(mac_bucket(slots_, b), mac);
    if (s < 0) continue;
    store(b * kSlotsPerBucket + static_cast<uint64_t>(s), kEmptySlot);
    --size_;
    ++version_;
    return true;
  }
  return false;
}

// ---- lookups ----

uint32_t MacTable::lookup(uint64_t mac) const {
  for (;;) {
    const uint64_t seq = move_seq_.load(std::memory_order_acquire);
    const uint32_t port = mac_lookup(slots_, mask_, mac);
    if (port != kMiss) return port;
    // A miss is only trusted if no cuckoo path was being applied while the buckets were read.
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((seq & 1) == 0 && move_seq_.load(std::memory_order_relaxed) == seq) return kMiss;
  }
}

void MacTable::lookup_batch(const uint64_t* macs, uint32_t* ports, size_t n) const {
  const uint64_t seq = move_seq_.load(std::memory_order_acquire);
  mac_lookup_pipeline(*this, macs, ports, n, kBatchDistance);
  std::atomic_thread_fence(std::memory_order_acquire);
  if ((seq & 1) == 0 && move_seq_.load(std::memory_order_relaxed) == seq) return;
  // A cuckoo path was applied meanwhile: hits stand, misses are looked up again (one by one, each
  // with its own check).
  for (size_t i = 0; i < n; ++i) {
    if (ports[i] == kMiss) ports[i] = lookup(macs[i]);
  }
}

namespace {

TANDEM_HD_INLINE void locate(const uint64_t* slots, uint64_t mask, uint64_t mac, const uint64_t** b1,
                             const uint64_t** b2) {
  *b1 = mac_bucket(slots, mac_hash1(mac) & mask);
  *b2 = mac_bucket(slots, mac_hash2(mac) & mask);
  prefetch_read(*b1);
  prefetch_read(*b2);
}

template <uint32_t D>
void lookup_pipeline(const uint64_t* slots, uint64_t mask, const uint64_t* macs, uint32_t* ports,
                     size_t n) {
  static_assert((D & (D - 1)) == 0, "a power of two, so that i % D is a mask");
  const uint64_t* ring1[D];
  const uint64_t* ring2[D];
  const size_t ahead = std::min<size_t>(D, n);
  for (size_t i = 0; i < ahead; ++i) locate(slots, mask, macs[i], &ring1[i], &ring2[i]);
  size_t i = 0;
  for (; i + D < n; ++i) {
    const size_t r = i & (D - 1);
    const uint64_t* b1 = ring1[r];
    const uint64_t* b2 = ring2[r];
    locate(slots, mask, macs[i + D], &ring1[r], &ring2[r]);
    ports[i] = mac_lookup_buckets(b1, b2, macs[i]);
  }
  for (; i < n; ++i) ports[i] = mac_lookup_buckets(ring1[i & (D - 1)], ring2[i & (D - 1)], macs[i]);
}

}  // namespace

void mac_lookup_pipeline(const MacTable& t, const uint64_t* macs, uint32_t* ports, size_t n,
                         uint32_t distance) {
  const uint64_t* s = t.slots();
  const uint64_t m = t.bucket_mask();
  if (distance <= 4) return lookup_pipeline<4>(s, m, macs, ports, n);
  if (distance <= 8) return lookup_pipeline<8>(s, m, macs, ports, n);
  if (distance <= 16) return lookup_pipeline<16>(s, m, macs, ports, n);
  if (distance <= 32) return lookup_pipeline<32>(s, m, macs, ports, n);
  return lookup_pipeline<64>(s, m, macs, ports, n);
}

// ---- learning switch ----

MacTable::Status learn(MacTable& table, uint64_t src_mac, uint32_t in_port) {
  if (mac_is_group(src_mac)) return MacTable::Status::kBadMac;
  return table.insert(src_mac, in_port);
}

uint32_t forward(const MacTable& table, uint64_t dst_mac) {
  if (mac_is_group(dst_mac)) return kFlood;  // no lookup: group addresses are never learned
  return mac_forward_decision(dst_mac, table.lookup(dst_mac));
}

void forward_batch(const MacTable& table, const uint64_t* dst_macs, uint32_t* ports, size_t n) {
  table.lookup_batch(dst_macs, ports, n);
  for (size_t i = 0; i < n; ++i) ports[i] = mac_forward_decision(dst_macs[i], ports[i]);
}

// ---- MAC text ----

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool parse_mac(std::string_view text, uint64_t* mac) {
  if (text.size() != 17) return false;
  uint64_t v = 0;
  for (size_t group = 0; group < 6; ++group) {
    const size_t at = group * 3;
    if (group > 0 && text[at - 1] != ':') return false;
    const int hi = hex_digit(text[at]);
    const int lo = hex_digit(text[at + 1]);
    if (hi < 0 || lo < 0) return false;
    v = (v << 8) | static_cast<uint64_t>(hi << 4 | lo);
  }
  *mac = v;
  return true;
}

std::string format_mac(uint64_t mac) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(17, ':');
  for (int group = 0; group < 6; ++group) {
    const auto octet = static_cast<unsigned>((mac >> (40 - 8 * group)) & 0xFF);
    s[static_cast<size_t>(group) * 3] = kHex[octet >> 4];
    s[static_cast<size_t>(group) * 3 + 1] = kHex[octet & 0xF];
  }
  return s;
}

}  // namespace tandem::l2
