// Test support for live SA updates (sa_control_test.cc, sa_control_live_test.cc): SAs with random
// keys, cleartext frames, ESP frames as a peer seals them for an inbound SA, and the check of a
// frame the gateway sealed, both with apps/crypto's code (not OpenSSL or intel-ipsec-mb, which the
// gateway uses).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "apps/ipsec/esp_hd.h"
#include "apps/ipsec/sa_file.h"
#include "apps/ipsec/sa_gen.h"
#include "core/parse_impl.h"
#include "io/flow_traffic.h"

namespace tandem::ipsec::sa_test {

inline IpAddr v4(uint32_t a) {
  IpAddr x;
  x.family = 4;
  for (int i = 0; i < 4; ++i) x.bytes[i] = static_cast<uint8_t>(a >> (24 - 8 * i));
  return x;
}

inline IpPrefix prefix(uint32_t a, uint8_t len) {
  IpPrefix p;
  p.addr = v4(len ? a & (~0u << (32 - len)) : 0);
  p.len = len;
  return p;
}

inline std::vector<uint8_t> random_key(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> k(n);
  for (uint8_t& b : k) b = static_cast<uint8_t>(rng());
  return k;
}

// An SA of `cipher` with random keys between 192.0.2.1 and 198.51.100.1; outbound ones protect
// src_sel -> dst_sel.
inline Sa make_sa(SaDir dir, uint32_t spi, Cipher cipher, std::mt19937_64& rng, IpPrefix src_sel = {},
                  IpPrefix dst_sel = {}) {
  Sa sa;
  sa.dir = dir;
  sa.spi = spi;
  sa.src = v4(dir == SaDir::kOut ? 0xC0000201u : 0xC6336401u);
  sa.dst = v4(dir == SaDir::kOut ? 0xC6336401u : 0xC0000201u);
  sa.cipher = cipher;
  sa.key = random_key(rng, cipher_key_bytes(cipher));
  sa.salt = random_key(rng, cipher_salt_bytes(cipher));
  if (cipher == Cipher::kAes128Cbc) {
    sa.auth = Auth::kHmacSha1_96;
    sa.auth_key = random_key(rng, 20);
  }
  if (dir == SaDir::kOut) {
    sa.sel_src = src_sel;
    sa.sel_dst = dst_sel;
    sa.has_selector = true;
  }
  return sa;
}

inline std::string add_line(const Sa& sa) { return "add " + format_sa_line(sa); }
inline std::string del_line(const Sa& sa) {
  return std::string("del ") + (sa.dir == SaDir::kIn ? "in " : "out ") + std::to_string(sa.spi);
}

// A UDP frame src -> dst (IPv4, host order) of `len` bytes; `index` goes into the IPv4 id.
inline std::vector<uint8_t> clear_frame(uint32_t src, uint32_t dst, uint32_t len, uint64_t index) {
  GenFlow f;
  const IpAddr s = v4(src), d = v4(dst);
  std::copy(s.bytes.begin(), s.bytes.begin() + 4, f.src);
  std::copy(d.bytes.begin(), d.bytes.begin() + 4, f.dst);
  f.sport = 1000;
  f.dport = 2000;
  len = std::max(len, min_frame_len(f, kProtoUdp));
  std::vector<uint8_t> frame(len);
  write_flow_frame(frame.data(), len, f, kProtoUdp, index);
  return frame;
}

// `sa` with the other direction: the peer's half of it (same SPI, keys and selector).
inline Sa mirrored(const Sa& sa) {
  Sa m = sa;
  m.dir = sa.dir == SaDir::kIn ? SaDir::kOut : SaDir::kIn;
  return m;
}

// The ESP frame a peer sends to inbound SA `in` for cleartext `clear`, with number seq.
inline std::vector<uint8_t> peer_seal(const Sa& in, const std::vector<uint8_t>& clear, uint64_t seq) {
  std::vector<uint8_t> f = clear;
  f.resize(f.size() + kMaxEspGrowth);
  ParsedPacket pp;
  if (parse_frame(f.data(), static_cast<uint32_t>(clear.size()), &pp) != DropReason::kNone) return {};
  EspTunnel t{};
  t.spi = in.spi;
  t.outer_family = 4;
  std::copy(in.src.bytes.begin(), in.src.bytes.end(), t.src);
  std::copy(in.dst.bytes.begin(), in.dst.bytes.end(), t.dst);
  t.shape = esp_shape(in.cipher);
  EspLayout l;
  if (esp_encapsulate(f.data(), static_cast<uint32_t>(f.size()), pp, t, seq, &l) != DropReason::kNone) return {};
  esp_hd_seal(esp_sa_keys(mirrored(in)), &crypto::aes_tables(), f.data(), l, seq);
  f.resize(l.frame_len);
  return f;
}

// The SPI and number of an ESP frame (false if it is not one).
inline bool esp_header(const uint8_t* frame, uint32_t len, uint32_t* spi, uint64_t* seq) {
  ParsedPacket pp;
  EspInbound in;
  if (parse_frame(frame, len, &pp) != DropReason::kNone || esp_inbound(frame, pp, &in) != DropReason::kNone) {
    return false;
  }
  *spi = in.spi;
  *seq = in.seq_low;
  return true;
}

// Whether a frame the gateway sealed with outbound SA `out` (number seq) opens under out's keys.
inline bool opens(const Sa& out, std::vector<uint8_t> frame, uint64_t seq) {
  ParsedPacket pp;
  EspInbound in;
  EspLayout l;
  const uint32_t len = static_cast<uint32_t>(frame.size());
  return parse_frame(frame.data(), len, &pp) == DropReason::kNone &&
         esp_inbound(frame.data(), pp, &in) == DropReason::kNone &&
         esp_in_layout(in, esp_shape(out.cipher), &l) == DropReason::kNone &&
         esp_hd_open(esp_sa_keys(mirrored(out)), &crypto::aes_tables(), frame.data(), l, seq) == DropReason::kNone;
}

}  // namespace tandem::ipsec::sa_test
