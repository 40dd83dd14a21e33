// ESP's cryptography for a burst of frames through intel-ipsec-mb's job API: the library
// interleaves the frames of a burst (AES-CBC encryption and HMAC-SHA1 of several frames at once,
// one per SIMD lane), where OpenSSL (esp_openssl.h) does one frame after the other. The output is
// byte for byte OpenSSL's: the same IVs (esp_iv_seed), the same ICVs, the same in-place decryption.
//
// One engine (an IMB_MGR, which is not thread-safe) per worker thread. The expanded keys of an SA
// (AES key schedules, HMAC inner and outer states, GCM key data) are made once, on the SA's first
// frame, and shared read-only by every thread's engine (EspIpsecMb::Keys).
//
// Only built with the library (TANDEM_HAVE_IPSEC_MB, cmake/TandemDeps.cmake); without it,
// available() is false and constructing an engine throws.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "apps/ipsec/esp_frame.h"
#include "apps/ipsec/sa_table.h"

namespace tandem::ipsec {

// One frame's crypto in a burst. Outbound SA (seal): the frame as esp_encapsulate left it; the IV
// and the ICV are written and the payload encrypted in place. Inbound SA (open): the frame as
// received, laid out by esp_in_layout; the ICV is verified and the payload decrypted in place (the
// payload is decrypted whatever the ICV: a frame that fails is to be dropped).
struct EspCryptoOp {
  uint32_t sa = 0;
  uint8_t* frame = nullptr;
  EspLayout layout{};
  uint64_t seq = 0;  // the full sequence number (ESN: its high half is authenticated)
  DropReason result = DropReason::kNone;  // run(): kNone, kBadIcv (open), kCryptoError
};

class EspIpsecMb {
 public:
  class Keys;

  // Whether this build has the library and it runs on this CPU (it needs SSE4.2, AES-NI and
  // PCLMULQDQ at least).
  static bool available();
  // The library's version and the code path it picked for this CPU, e.g.
  // "intel-ipsec-mb 2.0.0, AVX512 Type 2 (VAES, VPCLMUL, ..., SHA-NI)"; why not, if unavailable.
  static std::string describe();
  // The shared key store of `table`'s SAs (filled as SAs are first used). The table must outlive it.
  static std::shared_ptr<Keys> make_keys(const SaTable& table);
  // Wipes and frees SA i's expanded keys, for a slot whose SA was removed; not while an engine may
  // use SA i. Made again on the slot's next use.
  static void forget(Keys& keys, uint32_t i);

  explicit EspIpsecMb(std::shared_ptr<Keys> keys);
  ~EspIpsecMb();
  EspIpsecMb(const EspIpsecMb&) = delete;
  EspIpsecMb& operator=(const EspIpsecMb&) = delete;

  // Seals and opens every op (each by its SA's direction) in one multi-buffer pass, and sets each
  // op's result. Ops of any SAs and both directions may be mixed.
  void run(std::span<EspCryptoOp> ops);

 private:
  struct Engine;
  std::unique_ptr<Engine> engine_;
};

}  // namespace tandem::ipsec
