#include "apps/ipsec/esp_reference.h"

#include <vector>

namespace tandem::ipsec {

EspReference::EspReference(const SaTable& table) : table_(table) {
  keys_.reserve(table.size());
  for (uint32_t i = 0; i < table.size(); ++i) keys_.push_back(esp_sa_keys(table.sa(i)));
}

uint32_t EspReference::first_selecting(const FiveTuple& t) const {
  for (uint32_t i = 0; i < table_.size(); ++i) {
    const Sa& sa = table_.sa(i);
    if (sa.dir == SaDir::kOut && selector_holds(sa, t)) return i;
  }
  return kNoSa;
}

bool EspReference::verdict(const uint8_t* frame, uint32_t len, uint32_t v, uint32_t* want) const {
  ParsedPacket pp;
  if (parse_frame(frame, len, &pp) != DropReason::kNone) return false;
  if (Verdict::is_drop(v)) {
    if (Verdict::reason(v) != kUnknownSpi) return false;
    EspInbound in;
    if (esp_inbound(frame, pp, &in) != DropReason::kNone) return false;
    *want = v;
    for (uint32_t i = 0; i < table_.size(); ++i) {
      if (table_.sa(i).dir == SaDir::kIn && table_.sa(i).spi == in.spi) *want = Verdict::port(kPortDecrypted);
    }
    return true;
  }
  const uint32_t port = Verdict::port(v);
  if (port == kPortBypass) {
    *want = pp.tuple.proto != kProtoEsp && first_selecting(pp.tuple) == kNoSa ? v : Verdict::port(kPortTunnel);
    return true;
  }
  if (port == kPortDecrypted) {
    // The decrypting SA is not in the frame any more: some inbound SA must admit the packet.
    *want = Verdict::drop(kSelectorMismatch);
    for (uint32_t i = 0; i < table_.size(); ++i) {
      const Sa& sa = table_.sa(i);
      if (sa.dir == SaDir::kIn && (!sa.has_selector || selector_holds(sa, pp.tuple))) *want = v;
    }
    return true;
  }
  // Sent into a tunnel: open it again.
  *want = Verdict::drop(kBadIcv);
  EspInbound in;
  if (port != kPortTunnel || esp_inbound(frame, pp, &in) != DropReason::kNone) return true;
  uint32_t sa = kNoSa;
  for (uint32_t i = 0; i < table_.size(); ++i) {
    if (table_.sa(i).dir == SaDir::kOut && table_.sa(i).spi == in.spi) sa = i;
  }
  EspLayout l;
  if (sa == kNoSa || esp_in_layout(in, table_.tunnel(sa).shape, &l) != DropReason::kNone) return true;
  const Sa& s = table_.sa(sa);
  // The sender's full number: the low half sent, the high half from its counter (ESN).
  uint64_t seq = in.seq_low;
  if (s.esn) {
    const uint64_t next = table_.peek_seq(sa);
    seq = ((next - 1) & ~uint64_t{0xFFFFFFFF}) | in.seq_low;
    if (seq >= next) seq -= uint64_t{1} << 32;
  }
  std::vector<uint8_t> copy(frame, frame + len);
  EspSaKeys k = keys_[sa];
  if (s.cipher == Cipher::kAes128Cbc) crypto::aes_dec_key_from_enc(&k.cbc, &crypto::aes_tables(), k.cbc_iv);
  if (esp_hd_open(k, &crypto::aes_tables(), copy.data(), l, seq) != DropReason::kNone) return true;
  uint32_t inner_len = 0;
  ParsedPacket inner;
  if (esp_decapsulate(copy.data(), l, &inner_len) != DropReason::kNone ||
      parse_frame(copy.data(), inner_len, &inner) != DropReason::kNone) {
    return true;
  }
  if (first_selecting(inner.tuple) == sa) *want = v;
  return true;
}

}  // namespace tandem::ipsec
