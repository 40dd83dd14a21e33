#include "apps/ipsec/ipsec_app.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "apps/ipsec/esp_ipsecmb.h"
#include "apps/ipsec/esp_openssl.h"
#include "apps/ipsec/esp_reference.h"
#include "apps/ipsec/esp_resident.h"
#include "core/usage_error.h"
#include "gpu/gpu_runtime.h"

namespace tandem::ipsec {

namespace {
std::atomic<uint64_t> next_serial{1};
}  // namespace

// One worker thread's crypto: OpenSSL contexts, and the multi-buffer engine from its first burst.
struct IpsecWorker {
  explicit IpsecWorker(const SaTable& t) : ssl(t) {}
  EspOpenSsl ssl;
  std::unique_ptr<EspIpsecMb> mb;
};

// The crypto state of the threads that run this app. A worker thread takes an IpsecWorker on its
// first frame and gives it back when the thread ends (or runs another app), so the IpsecWorkers in
// use are bounded by the threads running at once, however many runs come and go. The multi-buffer
// engines share one store of expanded keys.
class IpsecApp::CryptoPool {
 public:
  explicit CryptoPool(const SaTable& t) : table_(t) {}
  std::unique_ptr<IpsecWorker> take() {
    std::lock_guard g(mu_);
    if (free_.empty()) {
      auto p = std::make_unique<IpsecWorker>(table_);
      all_.push_back(p.get());
      return p;
    }
    auto p = std::move(free_.back());
    free_.pop_back();
    return p;
  }
  // Drops every copy of SA i's keys in the workers' contexts (a removed SA's slot, which no thread
  // can reach: each IpsecWorker, in use or not, changes only its own entries of other SAs).
  void forget(uint32_t i) {
    std::lock_guard g(mu_);
    for (IpsecWorker* w : all_) w->ssl.forget(i);
    if (mb_keys_) EspIpsecMb::forget(*mb_keys_, i);
  }
  void give(std::unique_ptr<IpsecWorker> p) {
    std::lock_guard g(mu_);
    free_.push_back(std::move(p));
  }
  // w's multi-buffer engine, made on first use; null where intel-ipsec-mb is not available.
  EspIpsecMb* engine(IpsecWorker& w) {
    if (TANDEM_LIKELY(w.mb != nullptr)) return w.mb.get();
    if (!EspIpsecMb::available()) return nullptr;
    std::shared_ptr<EspIpsecMb::Keys> keys;
    {
      std::lock_guard g(mu_);
      if (!mb_keys_) mb_keys_ = EspIpsecMb::make_keys(table_);
      keys = mb_keys_;
    }
    w.mb = std::make_unique<EspIpsecMb>(std::move(keys));
    return w.mb.get();
  }

 private:
  const SaTable& table_;
  std::mutex mu_;
  std::vector<std::unique_ptr<IpsecWorker>> free_;
  // Every IpsecWorker made, in use by a thread or free: a thread that ends gives its worker back
  // while the pool lives, so none is destroyed before the pool.
  std::vector<IpsecWorker*> all_;
  std::shared_ptr<EspIpsecMb::Keys> mb_keys_;
};

namespace {

// This thread's IpsecWorker, and the app it belongs to.
struct ThreadCrypto {
  uint64_t serial = 0;
  std::weak_ptr<void> pool;
  std::unique_ptr<IpsecWorker> w;
  void (*give)(const std::shared_ptr<void>&, std::unique_ptr<IpsecWorker>) = nullptr;
  void release() {
    if (w) {
      if (auto p = pool.lock()) give(p, std::move(w));
      w.reset();
    }
    serial = 0;
  }
  ~ThreadCrypto() { release(); }
};
thread_local ThreadCrypto this_thread_crypto;

}  // namespace

IpsecApp::IpsecApp(SaTable& table)
    : table_(table), pool_(std::make_shared<CryptoPool>(table)), serial_(next_serial.fetch_add(1)) {}

IpsecApp::~IpsecApp() {
  if (this_thread_crypto.serial == serial_) this_thread_crypto.release();
}

IpsecWorker& IpsecApp::worker() const {
  ThreadCrypto& t = this_thread_crypto;
  if (TANDEM_LIKELY(t.serial == serial_)) return *t.w;
  t.release();
  t.w = pool_->take();
  t.pool = pool_;
  t.give = [](const std::shared_ptr<void>& p, std::unique_ptr<IpsecWorker> w) {
    static_cast<CryptoPool*>(p.get())->give(std::move(w));
  };
  t.serial = serial_;
  return *t.w;
}

const char* IpsecApp::reason_name(DropReason r) {
  if (r == kUnknownSpi) return "esp_unknown_spi";
  if (r == kReplayed) return "esp_replayed";
  if (r == kTooOld) return "esp_too_old";
  if (r == kBadIcv) return "esp_bad_icv";
  if (r == kBadPadding) return "esp_bad_padding";
  if (r == kBadEspLength) return "esp_bad_length";
  if (r == kBadInner) return "esp_bad_inner";
  if (r == kDummy) return "esp_dummy";
  if (r == kEspFragment) return "esp_fragment";
  if (r == kSeqOverflow) return "esp_seq_overflow";
  if (r == kTooBig) return "esp_too_big";
  if (r == kSelectorMismatch) return "esp_selector_mismatch";
  if (r == kCryptoError) return "esp_crypto_error";
  return nullptr;
}

const char* IpsecApp::drop_reason_name(DropReason r) const {
  const char* n = reason_name(r);
  return n ? n : tandem::drop_reason_name(r);
}

namespace {

// The steps around a frame's crypto, shared by the frame-by-frame and the burst paths.
//
// prepare: outbound, the SA by selector, the next sequence number and the encapsulation; inbound,
// the SA by SPI, the layout, the full sequence number and the replay check. True with `op` filled
// in when the frame goes on to its crypto; otherwise false with the verdict (bypass or a drop).
bool prepare(SaTable& table, uint8_t* frame, uint32_t len, uint32_t cap, EspCryptoOp* op, uint32_t* verdict) {
  ParsedPacket pp;
  DropReason r = parse_frame(frame, len, &pp);
  if (r == DropReason::kNone && pp.tuple.proto == kProtoEsp) {
    EspInbound in;
    r = esp_inbound_sa(frame, pp, [&](uint32_t spi) { return table.find_inbound(spi); }, kNoSa, &in, &op->sa);
    if (r == DropReason::kNone) r = esp_in_layout(in, table.tunnel(op->sa).shape, &op->layout);
    if (r == DropReason::kNone) {
      r = table.infer_and_check(op->sa, in.seq_low, &op->seq);
    }
  } else if (r == DropReason::kNone) {
    op->sa = table.select(pp.tuple);
    if (op->sa == kNoSa) {
      *verdict = Verdict::port(kPortBypass);
      return false;
    }
    if (!table.next_seq(op->sa, &op->seq)) {
      r = kSeqOverflow;
    } else {
      r = esp_encapsulate(frame, cap, pp, table.tunnel(op->sa), op->seq, &op->layout);
    }
  }
  if (r != DropReason::kNone) {
    *verdict = Verdict::drop(r);
    return false;
  }
  op->frame = frame;
  op->result = DropReason::kNone;
  return true;
}

// finish: after the crypto, the verdict and the frame's new length. Inbound frames whose ICV was
// right are marked received, then checked (padding, next header, inner packet, selector) and
// decapsulated. `recheck`: the replay check is made again before a failed ICV is reported, for
// frames checked against a window that has moved since (see process_burst).
uint32_t finish(SaTable& table, const EspCryptoOp& op, uint32_t* len, bool recheck) {
  const Sa& sa = table.sa(op.sa);
  if (op.result != DropReason::kNone) {
    if (recheck && sa.dir == SaDir::kIn) {
      if (const DropReason r = table.replay_check(op.sa, op.seq); r != DropReason::kNone) return Verdict::drop(r);
    }
    return Verdict::drop(op.result);
  }
  if (sa.dir == SaDir::kOut) {
    *len = op.layout.frame_len;
    return Verdict::port(kPortTunnel);
  }
  // The ICV was right: the number counts as received whatever the checks below find (if it is
  // still new: replay_accept checks again).
  if (const DropReason r = table.replay_accept(op.sa, op.seq); r != DropReason::kNone) return Verdict::drop(r);
  uint32_t inner_len = 0;
  if (const DropReason r = esp_decapsulate(op.frame, op.layout, &inner_len); r != DropReason::kNone) {
    return Verdict::drop(r);
  }
  ParsedPacket inner;
  if (parse_frame(op.frame, inner_len, &inner) != DropReason::kNone) return Verdict::drop(kBadInner);
  if (sa.has_selector && !selector_holds(sa, inner.tuple)) return Verdict::drop(kSelectorMismatch);
  *len = inner_len;
  return Verdict::port(kPortDecrypted);
}

}  // namespace

uint32_t IpsecApp::state_key(const uint8_t* frame, uint32_t len) const {
  ParsedPacket pp;
  if (parse_frame(frame, len, &pp) != DropReason::kNone) return kNoStateKey;
  uint32_t sa = kNoSa;
  if (pp.tuple.proto == kProtoEsp) {
    EspInbound in;
    if (esp_inbound_sa(frame, pp, [&](uint32_t spi) { return table_.find_inbound(spi); }, kNoSa, &in, &sa) !=
        DropReason::kNone) {
      return kNoStateKey;
    }
  } else {
    sa = table_.select(pp.tuple);
  }
  return sa == kNoSa ? kNoStateKey : sa;
}

uint32_t IpsecApp::process(uint8_t* frame, uint32_t* len, uint32_t cap) const {
  EspCryptoOp op;
  uint32_t verdict = 0;
  if (!prepare(table_, frame, *len, cap, &op, &verdict)) return verdict;
  EspOpenSsl& cx = worker().ssl;
  if (table_.sa(op.sa).dir == SaDir::kOut) {
    op.result = cx.seal(op.sa, frame, op.layout, op.seq) ? DropReason::kNone : kCryptoError;
  } else {
    op.result = cx.open(op.sa, frame, op.layout, op.seq);
  }
  return finish(table_, op, len, false);
}

// The frames of a burst are prepared in order (sequence numbers taken, replay windows checked),
// their crypto runs in one pass, and they are finished in order (windows checked again and
// updated). The first check sees the window as it was before the burst, so finish repeats it with
// the window as the burst's earlier frames left it, before the ICV's result counts, and a frame
// the first check found replayed gets its reason (replayed, or too old by now) in the same order:
// the verdicts are process()'s, a copy of an earlier frame of the same burst dropped as replayed. One
// difference remains, with ESN: the high half of the sequence number is inferred from the window
// before the burst, so a frame that the burst's earlier frames pushed out of the window is
// kTooOld here, where process() infers the next 2^32 subspace and finds the ICV wrong (kBadIcv).
void IpsecApp::process_burst(uint8_t* const* frames, uint32_t* lens, uint32_t cap, uint32_t n,
                             uint32_t* verdicts) const {
  IpsecWorker& w = worker();
  EspIpsecMb* mb = pool_->engine(w);
  if (mb == nullptr) {
    for (uint32_t i = 0; i < n; ++i) verdicts[i] = process(frames[i], &lens[i], cap);
    return;
  }
  constexpr uint32_t kBurst = PacketBatch::kCapacity;
  std::array<EspCryptoOp, kBurst> ops;
  std::array<uint32_t, kBurst> frame_of;
  struct Seen {  // a frame whose number the window held before the burst
    uint32_t frame, sa;
    uint64_t seq;
  };
  std::array<Seen, kBurst> seen;
  // A number seen before the burst is a replay whatever follows; but whether it is kReplayed or
  // kTooOld depends on how far the burst's earlier frames move the window, so it is decided in
  // frame order, among the others.
  const auto replay_reason = [&](const Seen& x) {
    const DropReason r = table_.replay_check(x.sa, x.seq);
    return Verdict::drop(r == DropReason::kNone ? kReplayed : r);
  };
  for (uint32_t base = 0; base < n; base += kBurst) {
    const uint32_t m = std::min(kBurst, n - base);
    uint32_t k = 0, ns = 0;
    for (uint32_t i = base; i < base + m; ++i) {
      if (prepare(table_, frames[i], lens[i], cap, &ops[k], &verdicts[i])) {
        frame_of[k++] = i;
      } else if (verdicts[i] == Verdict::drop(kReplayed)) {
        seen[ns++] = {i, ops[k].sa, ops[k].seq};
      }
    }
    mb->run({ops.data(), k});
    uint32_t q = 0;
    for (uint32_t j = 0; j < k; ++j) {
      for (; q < ns && seen[q].frame < frame_of[j]; ++q) verdicts[seen[q].frame] = replay_reason(seen[q]);
      verdicts[frame_of[j]] = finish(table_, ops[j], &lens[frame_of[j]], true);
    }
    for (; q < ns; ++q) verdicts[seen[q].frame] = replay_reason(seen[q]);
  }
}

void IpsecApp::forward(PacketPool& pool, PacketBatch& b, Counters& c, bool burst) const {
  const uint32_t cap = pool.max_frame();
  std::array<uint8_t*, PacketBatch::kCapacity> frames;
  std::array<uint32_t, PacketBatch::kCapacity> lens;
  for (uint32_t i = 0; i < b.size; ++i) {
    c.received(b.len[i]);
    frames[i] = pool.data(b.cell[i]);
    lens[i] = b.len[i];
  }
  if (burst) {
    process_burst(frames.data(), lens.data(), cap, b.size, b.verdict.data());
  } else {
    for (uint32_t i = 0; i < b.size; ++i) b.verdict[i] = process(frames[i], &lens[i], cap);
  }
  for (uint32_t i = 0; i < b.size; ++i) {
    b.len[i] = static_cast<uint16_t>(lens[i]);
    b.wire_len[i] = lens[i];
    b.l3_off[i] = kEthHeaderLen;
    c.verdict(b.verdict[i], lens[i]);
  }
}

void IpsecApp::forward_scalar(PacketPool& pool, PacketBatch& b, Counters& c) const { forward(pool, b, c, false); }
void IpsecApp::forward_batched(PacketPool& pool, PacketBatch& b, Counters& c) const { forward(pool, b, c, true); }

uint32_t IpsecApp::forward_frame(uint8_t* frame, uint32_t len, uint16_t* l3_off) const {
  if (l3_off) *l3_off = 0;  // the reference reads its keys from the frame itself
  std::vector<uint8_t> room(frame, frame + len);
  room.resize(len + kMaxEspGrowth);
  uint32_t n = len;
  const uint32_t v = process(room.data(), &n, static_cast<uint32_t>(room.size()));
  return v;
}

uint32_t IpsecApp::forward_frame_resizable(uint8_t* frame, uint32_t* len, uint32_t cap, uint16_t* l3_off) const {
  if (l3_off) *l3_off = 0;
  return process(frame, len, cap);
}

namespace {
[[noreturn]] void no_items() {
  throw std::logic_error("ipsec: the GPU item path is not offered (whole frames only)");
}
}  // namespace

void IpsecApp::classify(PacketPool&, PacketBatch&, KeyBatch&, Counters&) const { no_items(); }
void IpsecApp::apply(PacketPool&, PacketBatch&, const KeyBatch&, const void*, Counters&) const { no_items(); }
void IpsecApp::lookup_items(const void*, void*, size_t) const { no_items(); }
void IpsecApp::lookup_items_scalar(const void*, void*, size_t) const { no_items(); }

std::unique_ptr<gpu::OffloadRunner> IpsecApp::make_gpu_runner(const gpu::OffloadOptions&) {
  throw UsageError(kNoGpuItemPath);
}

std::unique_ptr<gpu::FrameRunner> IpsecApp::make_frame_runner(const gpu::FrameOptions&) const {
  throw gpu::GpuError(kNoGpuItemPath);
}

std::unique_ptr<gpu::ResidentRunner> IpsecApp::make_resident_runner(gpu::ResidentRing& ring,
                                                                    const gpu::ResidentOptions& o) const {
  return make_esp_resident_runner(table_, ring, o, control_.get());
}

TableControl* IpsecApp::table_control() {
  if (!control_) control_ = std::make_unique<SaControl>(table_, [pool = pool_.get()](uint32_t i) { pool->forget(i); });
  return control_.get();
}

void IpsecApp::build_reference() { reference_ = std::make_unique<EspReference>(table_); }

bool IpsecApp::reference_verdict(const uint8_t* frame, uint32_t len, uint16_t, uint32_t verdict, uint32_t* want) const {
  return reference_ && reference_->verdict(frame, len, verdict, want);
}

}  // namespace tandem::ipsec
