// The ipsec app's reference (--verify): a decision for each frame the app let out or dropped after
// its SA lookup, reached apart from the fast path. ESP sent into a tunnel is opened again with
// apps/crypto's code (not OpenSSL, which made it) and its inner packet must be one the SA was the
// first in file order to select; a decrypted packet must lie in its SA's selector, if it has one;
// a bypassed packet must be one no outbound selector holds (a plain scan in file order); an unknown
// SPI must be one no inbound SA has.
#pragma once

#include <cstdint>
#include <vector>

#include "apps/ipsec/esp_hd.h"
#include "core/batch.h"
#include "core/parse_impl.h"
#include "apps/ipsec/sa_table.h"

namespace tandem::ipsec {

class EspReference {
 public:
  explicit EspReference(const SaTable& table);
  // False when the frame's verdict has no reference decision (drops before the SA lookup, or
  // after it for the packet's contents); else true, with the reference's verdict in *want.
  bool verdict(const uint8_t* frame, uint32_t len, uint32_t verdict, uint32_t* want) const;

 private:
  uint32_t first_selecting(const FiveTuple& t) const;
  const SaTable& table_;
  std::vector<EspSaKeys> keys_;
};

}  // namespace tandem::ipsec
