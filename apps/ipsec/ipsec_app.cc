#include "apps/ipsec/ipsec_app.h"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "apps/ipsec/esp_openssl.h"
#include "apps/ipsec/esp_reference.h"
#include "core/usage_error.h"
#include "gpu/gpu_runtime.h"

namespace tandem::ipsec {

namespace {
std::atomic<uint64_t> next_serial{1};
}  // namespace

// The OpenSSL contexts of the threads that run this app. A worker thread takes a set on its
// first burst and gives it back when the thread ends (or runs another app), so the sets in use
// are bounded by the threads running at once, however many runs come and go.
class IpsecApp::CryptoPool {
 public:
  explicit CryptoPool(const SaTable& t) : table_(t) {}
  std::unique_ptr<EspOpenSsl> take() {
    std::lock_guard g(mu_);
    if (free_.empty()) return std::make_unique<EspOpenSsl>(table_);
    auto p = std::move(free_.back());
    free_.pop_back();
    return p;
  }
  void give(std::unique_ptr<EspOpenSsl> p) {
    std::lock_guard g(mu_);
    free_.push_back(std::move(p));
  }

 private:
  const SaTable& table_;
  std::mutex mu_;
  std::vector<std::unique_ptr<EspOpenSsl>> free_;
};

namespace {

// This thread's contexts, and the app they belong to.
struct ThreadCrypto {
  uint64_t serial = 0;
  std::weak_ptr<void> pool;
  std::unique_ptr<EspOpenSsl> cx;
  void (*give)(const std::shared_ptr<void>&, std::unique_ptr<EspOpenSsl>) = nullptr;
  void release() {
    if (cx) {
      if (auto p = pool.lock()) give(p, std::move(cx));
      cx.reset();
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

EspOpenSsl& IpsecApp::crypto() const {
  ThreadCrypto& t = this_thread_crypto;
  if (TANDEM_LIKELY(t.serial == serial_)) return *t.cx;
  t.release();
  t.cx = pool_->take();
  t.pool = pool_;
  t.give = [](const std::shared_ptr<void>& p, std::unique_ptr<EspOpenSsl> cx) {
    static_cast<CryptoPool*>(p.get())->give(std::move(cx));
  };
  t.serial = serial_;
  return *t.cx;
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

uint32_t IpsecApp::outbound(EspOpenSsl& cx, uint8_t* frame, uint32_t* len, uint32_t cap, const ParsedPacket& pp) const {
  const uint32_t i = table_.select(pp.tuple);
  if (i == kNoSa) return Verdict::port(kPortBypass);
  uint64_t seq = 0;
  if (!table_.next_seq(i, &seq)) return Verdict::drop(kSeqOverflow);
  EspLayout l;
  if (const DropReason r = esp_encapsulate(frame, cap, pp, table_.tunnel(i), seq, &l); r != DropReason::kNone) {
    return Verdict::drop(r);
  }
  if (!cx.seal(i, frame, l, seq)) return Verdict::drop(kCryptoError);
  *len = l.frame_len;
  return Verdict::port(kPortTunnel);
}

uint32_t IpsecApp::inbound(EspOpenSsl& cx, uint8_t* frame, uint32_t* len, const ParsedPacket& pp) const {
  EspInbound in;
  if (const DropReason r = esp_inbound(frame, pp, &in); r != DropReason::kNone) return Verdict::drop(r);
  const uint32_t i = table_.find_inbound(in.spi);
  if (i == kNoSa) return Verdict::drop(kUnknownSpi);
  EspLayout l;
  if (const DropReason r = esp_in_layout(in, table_.tunnel(i).shape, &l); r != DropReason::kNone) return Verdict::drop(r);
  const uint64_t seq = table_.infer_seq(i, in.seq_low);
  if (const DropReason r = table_.replay_check(i, seq); r != DropReason::kNone) return Verdict::drop(r);
  if (const DropReason r = cx.open(i, frame, l, seq); r != DropReason::kNone) return Verdict::drop(r);
  // The ICV was right: the number counts as received whatever the checks below find.
  if (const DropReason r = table_.replay_accept(i, seq); r != DropReason::kNone) return Verdict::drop(r);
  uint32_t inner_len = 0;
  if (const DropReason r = esp_decapsulate(frame, l, &inner_len); r != DropReason::kNone) return Verdict::drop(r);
  ParsedPacket inner;
  if (parse_frame(frame, inner_len, &inner) != DropReason::kNone) return Verdict::drop(kBadInner);
  const Sa& sa = table_.sa(i);
  if (sa.has_selector && !selector_holds(sa, inner.tuple)) return Verdict::drop(kSelectorMismatch);
  *len = inner_len;
  return Verdict::port(kPortDecrypted);
}

uint32_t IpsecApp::process(uint8_t* frame, uint32_t* len, uint32_t cap) const {
  ParsedPacket pp;
  if (const DropReason r = parse_frame(frame, *len, &pp); r != DropReason::kNone) return Verdict::drop(r);
  EspOpenSsl& cx = crypto();
  if (pp.tuple.proto == kProtoEsp) return inbound(cx, frame, len, pp);
  return outbound(cx, frame, len, cap, pp);
}

void IpsecApp::forward(PacketPool& pool, PacketBatch& b, Counters& c) const {
  const uint32_t cap = pool.max_frame();
  for (uint32_t i = 0; i < b.size; ++i) {
    c.received(b.len[i]);
    uint32_t len = b.len[i];
    const uint32_t v = process(pool.data(b.cell[i]), &len, cap);
    b.len[i] = static_cast<uint16_t>(len);
    b.wire_len[i] = len;
    b.l3_off[i] = kEthHeaderLen;
    b.flow_hash[i] = 0;
    b.verdict[i] = v;
    c.verdict(v, len);
  }
}

void IpsecApp::forward_scalar(PacketPool& pool, PacketBatch& b, Counters& c) const { forward(pool, b, c); }
void IpsecApp::forward_batched(PacketPool& pool, PacketBatch& b, Counters& c) const { forward(pool, b, c); }

uint32_t IpsecApp::forward_frame(uint8_t* frame, uint32_t len) const {
  std::vector<uint8_t> room(frame, frame + len);
  room.resize(len + kMaxEspGrowth);
  uint32_t n = len;
  const uint32_t v = process(room.data(), &n, static_cast<uint32_t>(room.size()));
  return v;
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

void IpsecApp::build_reference() { reference_ = std::make_unique<EspReference>(table_); }

bool IpsecApp::reference_verdict(const uint8_t* frame, uint32_t len, uint16_t, uint32_t verdict, uint32_t* want) const {
  return reference_ && reference_->verdict(frame, len, verdict, want);
}

}  // namespace tandem::ipsec
