// ESP's cryptography on the CPU through OpenSSL 3 (EVP): sealing the frames esp_encapsulate laid
// out and opening inbound ones. One object per worker thread (OpenSSL contexts are not
// thread-safe); each SA's contexts are made once, on its first packet, and per packet only the IV
// is set (re-initialising the key per packet costs three times the work at 64 bytes).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "apps/ipsec/esp_frame.h"
#include "apps/ipsec/sa_table.h"

namespace tandem::ipsec {

class EspOpenSsl {
 public:
  explicit EspOpenSsl(const SaTable& table);
  ~EspOpenSsl();
  EspOpenSsl(const EspOpenSsl&) = delete;
  EspOpenSsl& operator=(const EspOpenSsl&) = delete;

  // Outbound SA i, sequence number seq: writes the IV, encrypts the payload in place and writes
  // the ICV. False if OpenSSL failed (the frame is then not to be sent).
  bool seal(uint32_t i, uint8_t* frame, const EspLayout& l, uint64_t seq);
  // Inbound SA i: verifies the ICV over the frame as received and decrypts the payload in place.
  // kNone, kBadIcv, or kCryptoError if OpenSSL failed.
  DropReason open(uint32_t i, uint8_t* frame, const EspLayout& l, uint64_t seq);
  // Frees SA i's contexts (OpenSSL wipes their keys), for a slot whose SA was removed; not while
  // this thread's worker may use SA i.
  void forget(uint32_t i);

 private:
  struct Contexts;
  Contexts& contexts(uint32_t i);

  const SaTable& table_;
  std::vector<std::unique_ptr<Contexts>> ctx_;
};

}  // namespace tandem::ipsec
