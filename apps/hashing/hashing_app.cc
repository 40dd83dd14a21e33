#include "apps/hashing/hashing_app.h"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "apps/crypto/digest_cpu.h"
#include "apps/forward_app_impl.h"
#include "apps/hashing/hashing_gpu.h"

namespace tandem::hashing {

HashingSetup::HashingSetup(const HashingConfig& config, uint64_t capacity) : config_(config), table_(capacity) {
  if (config.chunk != 0 && (config.chunk < kMinChunk || config.chunk > kMaxChunk)) {
    throw std::invalid_argument("chunk size " + std::to_string(config.chunk) + ": 0 (whole payloads) or " +
                                std::to_string(kMinChunk) + ".." + std::to_string(kMaxChunk) + " bytes");
  }
  // OpenSSL may refuse an algorithm (MD5 in a FIPS-only configuration): say so now, not mid-run.
  const uint8_t probe = 0;
  uint8_t d[crypto::kMaxDigestBytes];
  crypto::openssl_digest(config.algo, &probe, 1, d);
}

void HashingSetup::warm_up(std::vector<uint8_t> payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  uint8_t d[crypto::kMaxDigestBytes];
  for (uint32_t i = 0; i < chunk_count(n, config_.chunk); ++i) {
    crypto::openssl_digest(config_.algo, payload.data() + chunk_offset(i, config_.chunk),
                           chunk_bytes(n, config_.chunk, i), d);
    table_.insert(fingerprint(d));
  }
  warm_.push_back(std::move(payload));
}

void HashingSetup::Packet::chunk(const uint8_t* digest, uint32_t bytes) {
  const uint64_t fp = fingerprint(digest);
  const bool seen = s_.config_.learn ? s_.table_.insert(fp) == FingerprintTable::Insert::kPresent : s_.table_.contains(fp);
  ++chunks_;
  if (seen) {
    ++redundant_chunks_;
    redundant_bytes_ += bytes;
  }
}

uint32_t HashingSetup::Packet::verdict() {
  if (len_ > 0) {
    s_.payloads_.add(1);
    s_.payload_bytes_.add(len_);
    s_.chunks_.add(chunks_);
    if (redundant_chunks_) {
      s_.redundant_payloads_.add(1);
      s_.redundant_chunks_.add(redundant_chunks_);
      s_.redundant_bytes_.add(redundant_bytes_);
    }
  }
  return hashing_verdict(redundant_chunks_ > 0);
}

HashingCounts HashingSetup::counts() const {
  HashingCounts c;
  c.payloads = payloads_.total();
  c.payload_bytes = payload_bytes_.total();
  c.chunks = chunks_.total();
  c.redundant_payloads = redundant_payloads_.total();
  c.redundant_chunks = redundant_chunks_.total();
  c.redundant_bytes = redundant_bytes_.total();
  return c;
}

std::string HashingSetup::describe(const std::string& warm_source) const {
  char buf[512];
  const std::string what = config_.chunk ? std::to_string(config_.chunk) + "-byte chunks" : std::string("whole payloads");
  std::snprintf(buf, sizeof buf,
                "%s of %s; fingerprint table of %llu slots (%llu sets of %u, FIFO per set, %.1f MiB): %llu fingerprints "
                "from %s (%llu evicted); data path: %s",
                crypto::digest_name(config_.algo), what.c_str(), static_cast<unsigned long long>(table_.slot_count()),
                static_cast<unsigned long long>(table_.set_count()), FingerprintTable::kWays,
                table_.memory_bytes() / 1048576.0,
                static_cast<unsigned long long>(table_.inserted() - table_.evicted()), warm_source.c_str(),
                static_cast<unsigned long long>(table_.evicted()),
                config_.learn ? "looks up and learns (--learn on)" : "looks up only (--learn off)");
  return buf;
}

namespace {

// The item traits (apps/forward_app_impl.h): the key is the payload in the frame, the item a copy
// of it, the result its chunks' digests (kSlots of them at most).
template <uint32_t kSlots>
struct HashingTraits {
  using Key = HashKey;
  using Item = HashItem;
  using Result = HashDigests<kSlots>;
  static constexpr const char* kName = "hashing";

  explicit HashingTraits(HashingSetup& s) : setup(&s) {}

  size_t ports() const { return kPorts; }
  HashingCore frame_core() const {
    const HashingConfig& c = setup->config();
    return {setup->table().view(), setup->table().slot_count(), c.algo, c.chunk};
  }
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
    return hashing_classify(frame, len, key, l3_off, flow);
  }
  // The table line is known only once the payload is digested.
  void prefetch(const Key&) const {}
  Result lookup(const Key& k) const { return digests(k.payload, k.len); }
  void lookup_batch(const Key* keys, Result* results, size_t n) const {
    for (size_t i = 0; i < n; ++i) results[i] = lookup(keys[i]);
  }
  void to_item(const Key& k, Item* item) const { make_hash_item(k, item); }
  // The engine's CPU fallback: what the GPU computes, through OpenSSL.
  void lookup_items(const Item* items, Result* results, size_t n) const {
    for (size_t i = 0; i < n; ++i) results[i] = lookup_item(items[i]);
  }
  Result lookup_item(const Item& it) const {
    if (it.len == HashItem::kTooLong) return resolve_on_worker();
    return digests(it.bytes, it.len);
  }

  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t, const Result& r) const {
    const uint32_t chunk = setup->config().chunk;
    if (r.count != Result::kResolveOnWorker) {
      HashingSetup::Packet p(*setup, r.payload_len);
      for (uint32_t i = 0; i < r.count; ++i) p.chunk(r.digest[i], chunk_bytes(r.payload_len, chunk, i));
      return p.verdict();
    }
    // The digests did not fit the result: the payload, found again in the frame (never rewritten).
    HashKey k{};
    uint16_t l3_off = 0;
    if (const DropReason why = classify(frame, len, &k, &l3_off, nullptr); why != DropReason::kNone) {
      return Verdict::drop(why);  // not reached: the frame was classified before its lookup
    }
    HashingSetup::Packet p(*setup, k.len);
    uint8_t d[crypto::kMaxDigestBytes];
    for (uint32_t i = 0; i < chunk_count(k.len, chunk); ++i) {
      crypto::openssl_digest(setup->config().algo, k.payload + chunk_offset(i, chunk), chunk_bytes(k.len, chunk, i), d);
      p.chunk(d, chunk_bytes(k.len, chunk, i));
    }
    return p.verdict();
  }

  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts) {
    return make_digest_runner(kSlots, setup->config().algo, setup->config().chunk, opts);
  }
  void build_reference() { ref = std::make_unique<HashingReference>(*setup); }
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t) const { return ref->verdict(frame, len); }

  static Result resolve_on_worker() {
    Result r{};
    r.count = Result::kResolveOnWorker;
    return r;
  }
  Result digests(const uint8_t* payload, uint32_t len) const {
    const HashingConfig& c = setup->config();
    const uint32_t n = chunk_count(len, c.chunk);
    if (n > kSlots) return resolve_on_worker();
    Result r{};
    r.count = static_cast<uint16_t>(n);
    r.payload_len = static_cast<uint16_t>(len);
    for (uint32_t i = 0; i < n; ++i) {
      crypto::openssl_digest(c.algo, payload + chunk_offset(i, c.chunk), chunk_bytes(len, c.chunk, i), r.digest[i]);
    }
    return r;
  }

  HashingSetup* setup;
  std::unique_ptr<HashingReference> ref;
};

// The app: ForwardAppImpl over the traits, except where the data path learns (hashing_app.h):
// then the per-packet logic is the data path's (the frame core only reads the table), there is no
// whole-frame GPU path, and no reference.
template <uint32_t kSlots>
class HashingApp final : public ForwardApp {
 public:
  explicit HashingApp(HashingSetup& s) : impl_(s), learn_(s.config().learn) {}

  const char* name() const override { return impl_.name(); }
  const char* drop_reason_name(DropReason r) const override { return impl_.drop_reason_name(r); }
  size_t ports() const override { return impl_.ports(); }
  size_t item_bytes() const override { return impl_.item_bytes(); }
  size_t result_bytes() const override { return impl_.result_bytes(); }
  void forward_scalar(PacketPool& pool, PacketBatch& b, Counters& c) const override { impl_.forward_scalar(pool, b, c); }
  void forward_batched(PacketPool& pool, PacketBatch& b, Counters& c) const override { impl_.forward_batched(pool, b, c); }
  void classify(PacketPool& pool, PacketBatch& b, KeyBatch& keys, Counters& c) const override {
    impl_.classify(pool, b, keys, c);
  }
  void apply(PacketPool& pool, PacketBatch& b, const KeyBatch& keys, const void* results, Counters& c) const override {
    impl_.apply(pool, b, keys, results, c);
  }
  void lookup_items(const void* items, void* results, size_t n) const override { impl_.lookup_items(items, results, n); }
  void lookup_items_scalar(const void* items, void* results, size_t n) const override {
    impl_.lookup_items_scalar(items, results, n);
  }
  bool item_of_frame(const uint8_t* frame, uint32_t len, void* item) const override {
    return impl_.item_of_frame(frame, len, item);
  }
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts) override {
    return impl_.make_gpu_runner(opts);
  }

  using ForwardApp::forward_frame;
  uint32_t forward_frame(uint8_t* frame, uint32_t len, uint16_t* l3_out) const override {
    if (!learn_) return impl_.forward_frame(frame, len, l3_out);
    const HashingTraits<kSlots>& t = impl_.traits();
    HashKey k{};
    uint16_t l3_off = 0;
    const DropReason r = t.classify(frame, len, &k, &l3_off, nullptr);
    if (l3_out) *l3_out = r == DropReason::kNone ? l3_off : 0;
    return r != DropReason::kNone ? Verdict::drop(r) : t.apply(frame, len, l3_off, t.lookup(k));
  }
  std::unique_ptr<gpu::FrameRunner> make_frame_runner(const gpu::FrameOptions& opts) const override {
    if (learn_) {
      throw gpu::GpuError("hashing --learn on: no whole-frame GPU path (a device copy of the fingerprint table "
                          "cannot follow the inserts); the item path digests on the GPU");
    }
    return impl_.make_frame_runner(opts);
  }
  std::unique_ptr<gpu::ResidentRunner> make_resident_runner(gpu::ResidentRing& ring,
                                                            const gpu::ResidentOptions& opts) const override {
    if (learn_) {
      throw gpu::GpuError("hashing --learn on: no whole-frame GPU path (a device copy of the fingerprint table "
                          "cannot follow the inserts)");
    }
    return impl_.make_resident_runner(ring, opts);
  }
  void build_reference() override {
    if (!learn_) impl_.build_reference();
  }
  bool reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t verdict,
                         uint32_t* want) const override {
    return !learn_ && impl_.reference_verdict(frame, len, l3_off, verdict, want);
  }

 private:
  ForwardAppImpl<HashingTraits<kSlots>> impl_;
  bool learn_;
};

}  // namespace

std::unique_ptr<ForwardApp> make_hashing_app(HashingSetup& setup) {
  if (setup.config().chunk == 0) return std::make_unique<HashingApp<1>>(setup);
  return std::make_unique<HashingApp<kChunkSlots>>(setup);
}

}  // namespace tandem::hashing
