// ForwardAppImpl<Traits>: a ForwardApp (apps/forward_app.h) from an app's per-packet pieces, so the
// three paths, the counters and verification are the same code for every app.
//
// A Traits class provides:
//   using Key;      what the CPU paths look up (an address, a MAC, a pointer to a name in the frame)
//   using Item;     what the GPU gets for it (trivially copyable; for most apps Key itself)
//   using Result;   optional: what a lookup gives, the GPU's result (trivially copyable; default
//                   uint32_t, a next hop or port)
//   static constexpr const char* kName;
//   SomeCore frame_core() const;  // the app's whole per-packet logic over its tables
//                                 // (apps/frame_core.h); classify, lookup and apply below are
//                                 // built from the same functions. A table without a GPU path
//                                 // (Poptrie) may leave it out.
//   size_t ports() const;
//   DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const;
//                 // flow: the flow's hash, computed only where flow is not null (the paths here
//                 // pass null: no stage reads it)
//   void prefetch(const Key&) const;                              // the key's first table line
//   Result lookup(const Key&) const;                              // scalar
//   void lookup_batch(const Key* keys, Result* results, size_t n) const;
//   void to_item(const Key&, Item*) const;
//   void lookup_items(const Item* items, Result* results, size_t n) const;  // = the GPU kernel's
//   Result lookup_item(const Item&) const;                        // one item, scalar
//   uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, const Result& result) const;  // verdict
//   std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions&);
//   void build_reference();
//   // The reference's verdict for a frame that reached the lookup (its verdict is final; the frame
//   // may have been rewritten by apply): the key is read again from the frame.
//   uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const;
// and may provide
//   // The drop reasons the lookup and apply give (so verification checks them against the
//   // reference); without it, kNoRoute alone. The fw-router adds kAclDenied.
//   static constexpr bool lookup_drops(DropReason r);
//   // The names of the app's own drop reasons (core/drop_reason.h app_drop_reason), null for others.
//   static const char* drop_reason_name(DropReason r);
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "apps/forward_app.h"
#include "apps/frame_core.h"
#include "core/flow_hash.h"

namespace tandem {

// Traits::Result when the traits declare one, else uint32_t.
template <class T, class = void>
struct ResultOf {
  using type = uint32_t;
};
template <class T>
struct ResultOf<T, std::void_t<typename T::Result>> {
  using type = typename T::Result;
};

// The app's own drop reasons with their names (Traits::drop_reason_name), for the registry.
template <class Traits>
std::vector<std::pair<DropReason, std::string>> app_drop_reasons() {
  std::vector<std::pair<DropReason, std::string>> v;
  if constexpr (requires(DropReason r) { Traits::drop_reason_name(r); }) {
    for (int i = 0; i < kAppDropReasons; ++i) {
      if (const char* n = Traits::drop_reason_name(app_drop_reason(i))) v.emplace_back(app_drop_reason(i), n);
    }
  }
  return v;
}

template <class Traits>
class ForwardAppImpl final : public ForwardApp {
 public:
  using Key = typename Traits::Key;
  using Item = typename Traits::Item;
  using Result = typename ResultOf<Traits>::type;
  static_assert(std::is_trivially_copyable_v<Item>, "GPU items are copied as bytes");
  static_assert(std::is_trivially_copyable_v<Result>, "GPU results are copied as bytes");

  template <class... Args>
  explicit ForwardAppImpl(Args&&... args) : t_(std::forward<Args>(args)...) {}

  Traits& traits() { return t_; }
  const Traits& traits() const { return t_; }

  const char* name() const override { return Traits::kName; }
  const char* drop_reason_name(DropReason r) const override {
    if constexpr (requires { Traits::drop_reason_name(r); }) {
      if (const char* n = Traits::drop_reason_name(r)) return n;
    }
    return tandem::drop_reason_name(r);
  }
  size_t ports() const override { return t_.ports(); }
  size_t item_bytes() const override { return sizeof(Item); }
  size_t result_bytes() const override { return sizeof(Result); }

  void forward_scalar(PacketPool& pool, PacketBatch& b, Counters& c) const override {
    for (uint32_t i = 0; i < b.size; ++i) {
      Key key;
      if (classify_one<false>(pool, b, i, &key, c)) apply_one<false>(pool, b, i, t_.lookup(key), c);
    }
    c.count(b);
  }

  void forward_batched(PacketPool& pool, PacketBatch& b, Counters& c) const override {
    forward_batched_stages<false>(pool, b, c, nullptr);
  }
  void forward_batched_staged(PacketPool& pool, PacketBatch& b, Counters& c, StageTimes& st) const override {
    forward_batched_stages<true>(pool, b, c, &st);
  }

  void classify(PacketPool& pool, PacketBatch& b, KeyBatch& keys, Counters& c) const override {
    keys.count = 0;
    for (uint32_t i = 0; i < b.size; ++i) {
      Key key;
      if (classify_one<true>(pool, b, i, &key, c)) {
        t_.to_item(key, static_cast<Item*>(keys.item(keys.count)));
        keys.position[keys.count++] = static_cast<uint16_t>(i);
      }
    }
  }

  void apply(PacketPool& pool, PacketBatch& b, const KeyBatch& keys, const void* results,
             Counters& c) const override {
    // Results may sit anywhere in an engine's buffer: read each one by copy, not through a cast.
    const uint8_t* r = static_cast<const uint8_t*>(results);
    for (uint32_t k = 0; k < keys.count; ++k) {
      Result v;
      std::memcpy(&v, r + size_t{k} * sizeof(Result), sizeof(Result));
      apply_one<true>(pool, b, keys.position[k], v, c);
    }
  }

  void lookup_items(const void* items, void* results, size_t n) const override {
    t_.lookup_items(static_cast<const Item*>(items), static_cast<Result*>(results), n);
  }

  void lookup_items_scalar(const void* items, void* results, size_t n) const override {
    const Item* it = static_cast<const Item*>(items);
    Result* out = static_cast<Result*>(results);
    for (size_t i = 0; i < n; ++i) out[i] = t_.lookup_item(it[i]);
  }

  bool item_of_frame(const uint8_t* frame, uint32_t len, void* item) const override {
    Key key;
    uint16_t l3_off = 0;
    if (t_.classify(frame, len, &key, &l3_off, nullptr) != DropReason::kNone) return false;
    t_.to_item(key, static_cast<Item*>(item));
    return true;
  }

  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts) override {
    return t_.make_gpu_runner(opts);
  }

  using ForwardApp::forward_frame;
  uint32_t forward_frame(uint8_t* frame, uint32_t len, uint16_t* l3_out) const override {
    if constexpr (requires { t_.frame_core(); }) {
      return tandem::forward_frame(t_.frame_core(), frame, len, l3_out);
    } else {
      Key key;
      uint16_t l3_off = 0;
      const DropReason r = t_.classify(frame, len, &key, &l3_off, nullptr);
      if (l3_out) *l3_out = r == DropReason::kNone ? l3_off : 0;
      return r != DropReason::kNone ? Verdict::drop(r) : t_.apply(frame, len, l3_off, t_.lookup(key));
    }
  }

  std::unique_ptr<gpu::FrameRunner> make_frame_runner(const gpu::FrameOptions& opts) const override {
    if constexpr (requires { t_.frame_core(); }) {
      return gpu::make_frame_runner(t_.frame_core(), opts);
    } else {
      throw gpu::GpuError(std::string(Traits::kName) + ": this table has no GPU path");
    }
  }
  std::unique_ptr<gpu::ResidentRunner> make_resident_runner(gpu::ResidentRing& ring,
                                                            const gpu::ResidentOptions& opts) const override {
    if constexpr (requires { t_.frame_core(); }) {
      return gpu::make_resident_runner(t_.frame_core(), ring, opts);
    } else {
      throw gpu::GpuError(std::string(Traits::kName) + ": this table has no GPU path");
    }
  }

  void build_reference() override { t_.build_reference(); }

  TableControl* table_control() override {
    if constexpr (requires { t_.table_control(); }) {
      return t_.table_control();
    } else {
      return nullptr;
    }
  }

  // True for a drop the lookup (or apply) decided, which the reference must agree with; the other
  // reasons come from classify, before the lookup.
  static constexpr bool lookup_drops(DropReason r) {
    if constexpr (requires { Traits::lookup_drops(r); }) {
      return Traits::lookup_drops(r);
    } else {
      return r == DropReason::kNoRoute;
    }
  }

  bool reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t verdict,
                         uint32_t* want) const override {
    if (Verdict::is_drop(verdict) && !lookup_drops(Verdict::reason(verdict))) return false;
    *want = t_.reference_verdict(frame, len, l3_off);
    return true;
  }

 private:
  // The CPU paths count a burst in one pass once its verdicts are final (Counters::count); the
  // GPU path, whose bursts are classified and applied apart, counts as it goes (kCount).
  template <bool kTimed>
  void forward_batched_stages(PacketPool& pool, PacketBatch& b, Counters& c, StageTimes* st) const {
    Key keys[PacketBatch::kCapacity];
    uint16_t pos[PacketBatch::kCapacity];
    Result results[PacketBatch::kCapacity];
    uint64_t t = 0;
    if constexpr (kTimed) t = stage_ticks();
    uint32_t n = 0;
    for (uint32_t i = 0; i < b.size; ++i) {
      if (classify_one<false>(pool, b, i, &keys[n], c)) {
        t_.prefetch(keys[n]);  // the miss overlaps with parsing the rest of the burst
        pos[n++] = static_cast<uint16_t>(i);
      }
    }
    if constexpr (kTimed) t = st->lap(Stage::kParse, t);
    t_.lookup_batch(keys, results, n);
    if constexpr (kTimed) t = st->lap(Stage::kLookup, t);
    for (uint32_t k = 0; k < n; ++k) apply_one<false>(pool, b, pos[k], results[k], c);
    if constexpr (kTimed) t = st->lap(Stage::kApply, t);
    c.count(b);
    if constexpr (kTimed) st->lap(Stage::kCount, t);
  }

  template <bool kCount>
  bool classify_one(PacketPool& pool, PacketBatch& b, uint32_t i, Key* key, Counters& c) const {
    if constexpr (kCount) c.received(b.len[i]);
    uint16_t l3_off = 0;
    const DropReason r = t_.classify(pool.data(b.cell[i]), b.len[i], key, &l3_off, nullptr);
    if (r != DropReason::kNone) {
      b.verdict[i] = Verdict::drop(r);
      if constexpr (kCount) c.drop(r);
      return false;
    }
    b.l3_off[i] = l3_off;
    return true;
  }

  template <bool kCount>
  void apply_one(PacketPool& pool, PacketBatch& b, uint32_t i, const Result& result, Counters& c) const {
    const uint32_t v = t_.apply(pool.data(b.cell[i]), b.len[i], b.l3_off[i], result);
    b.verdict[i] = v;
    if constexpr (kCount) c.verdict(v, b.len[i]);
  }

  Traits t_;
};

}  // namespace tandem
