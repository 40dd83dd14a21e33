// The IPsec ESP gateway (RFC 4303, tunnel mode) as a forwarding app. Every frame goes one of two
// ways by its protocol:
//   - ESP (protocol 50) is inbound: SA by SPI (unknown: dropped), anti-replay check, ICV
//     verification, decryption, padding and inner-packet checks, the inner selector check, and
//     the inner packet leaves on port 1 (kPortDecrypted);
//   - anything else is outbound: the first SA whose selector holds it encapsulates and encrypts
//     it, out on port 0 (kPortTunnel); a packet no SA selects leaves unchanged on port 2
//     (kPortBypass).
// Frames change length (ESP adds 36-93 bytes, decapsulation removes them) inside their packet
// cell; a frame that would not fit its cell after encapsulation is dropped (kTooBig).
//
// The CPU paths, with per-worker-thread crypto state: scalar is OpenSSL frame by frame
// (apps/ipsec/esp_openssl.h); batched hands a burst's crypto to intel-ipsec-mb in one multi-buffer
// pass (apps/ipsec/esp_ipsecmb.h), and is OpenSSL's loop in builds without that library or on a
// CPU it cannot run on. Both give the same bytes. ESP does not fit the GPU item path of the other
// apps (a 4-byte key in, a result out): on the GPU, the app runs on the resident path, whole
// frames and the per-SA state on the GPU (apps/ipsec/esp_resident.h); `tandem bench crypto` also
// times batches of whole frames (apps/ipsec/esp_gpu.h).
#pragma once

#include <cstdint>
#include <memory>

#include "apps/forward_app.h"
#include "apps/ipsec/esp_frame.h"
#include "apps/ipsec/sa_control.h"
#include "apps/ipsec/sa_table.h"

namespace tandem::ipsec {

class EspReference;
struct IpsecWorker;  // a worker thread's crypto state (ipsec_app.cc)

// Why the offload path refuses the app (AppSpec::resident_only).
inline constexpr const char* kNoGpuItemPath =
    "ipsec: the GPU runs ESP on whole frames, through the resident path only: use --gpu-path resident";

class IpsecApp final : public ForwardApp {
 public:
  explicit IpsecApp(SaTable& table);
  ~IpsecApp() override;

  SaTable& table() const { return table_; }
  static const char* reason_name(DropReason r);

  const char* name() const override { return "ipsec"; }
  const char* drop_reason_name(DropReason r) const override;
  size_t ports() const override { return kPorts; }
  size_t item_bytes() const override { return 4; }
  size_t result_bytes() const override { return 4; }

  void forward_scalar(PacketPool& pool, PacketBatch& b, Counters& c) const override;
  void forward_batched(PacketPool& pool, PacketBatch& b, Counters& c) const override;

  // The GPU item path: not offered (the app is resident_only).
  void classify(PacketPool&, PacketBatch&, KeyBatch&, Counters&) const override;
  void apply(PacketPool&, PacketBatch&, const KeyBatch&, const void*, Counters&) const override;
  void lookup_items(const void*, void*, size_t) const override;
  void lookup_items_scalar(const void*, void*, size_t) const override;
  bool item_of_frame(const uint8_t*, uint32_t, void*) const override { return false; }
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions&) override;

  // One frame with room for `cap` bytes: its verdict, and its new length in *len (OpenSSL).
  uint32_t process(uint8_t* frame, uint32_t* len, uint32_t cap) const;
  // n frames, each with room for `cap` bytes: their verdicts and new lengths, as process() gives
  // them frame by frame, with the crypto of up to PacketBatch::kCapacity frames at a time in one
  // intel-ipsec-mb pass (OpenSSL frame by frame where that library is not available). The
  // forward_batched path, and what `tandem bench crypto` times for it.
  void process_burst(uint8_t* const* frames, uint32_t* lens, uint32_t cap, uint32_t n, uint32_t* verdicts) const;
  // forward_frame for callers that cannot take a new length: the frame is processed in a copy
  // with room to grow, and only its verdict comes back.
  using ForwardApp::forward_frame;
  uint32_t forward_frame(uint8_t* frame, uint32_t len, uint16_t* l3_off) const override;
  uint32_t frame_growth() const override { return kMaxEspGrowth; }
  // The state keys are the SAs: an outbound frame's by selector, an inbound one's by SPI, as
  // process() finds them (a frame with no SA uses none).
  uint32_t state_keys() const override { return static_cast<uint32_t>(table_.size()); }
  uint32_t state_key(const uint8_t* frame, uint32_t len) const override;
  uint32_t forward_frame_resizable(uint8_t* frame, uint32_t* len, uint32_t cap, uint16_t* l3_off) const override;
  std::unique_ptr<gpu::FrameRunner> make_frame_runner(const gpu::FrameOptions&) const override;
  std::unique_ptr<gpu::ResidentRunner> make_resident_runner(gpu::ResidentRing&,
                                                            const gpu::ResidentOptions&) const override;

  // Verification (--verify): an ESP frame sent into a tunnel is opened again by an independent
  // implementation (apps/crypto's, not OpenSSL) and its inner packet checked against the SA's
  // selector; a decrypted packet against its SA's selector; a bypassed one against every
  // outbound selector in file order; an unknown SPI against every inbound SA.
  void build_reference() override;
  bool reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t verdict,
                         uint32_t* want) const override;

  // Live SA updates (sa_control.h), made on the first call. A resident runner made after it keeps
  // its copy of the SAs in step (esp_resident.h); the reference (--verify) works on the SAs as
  // they were, so `tandem run --control` refuses --verify.
  TableControl* table_control() override;

 private:
  class CryptoPool;
  IpsecWorker& worker() const;
  void forward(PacketPool& pool, PacketBatch& b, Counters& c, bool burst) const;

  SaTable& table_;
  std::shared_ptr<CryptoPool> pool_;
  uint64_t serial_;
  std::unique_ptr<EspReference> reference_;
  std::unique_ptr<SaControl> control_;  // after pool_: destroyed first, as it calls into it
};

}  // namespace tandem::ipsec
