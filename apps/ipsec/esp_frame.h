// ESP tunnel-mode framing (RFC 4303), written once as `__host__ __device__` code for the CPU
// paths and the GPU kernels: where every field of an ESP frame lies, the outbound encapsulation
// (outer header, ESP header, padding, trailer) and the inbound checks and decapsulation. The
// cryptography is not here: the caller seals or opens the bytes this code lays out (OpenSSL on
// the CPU, apps/crypto on the GPU), so every path frames packets identically.
//
// An outbound frame, built in place in the packet's own buffer:
//
//   Ethernet (MACs kept, no VLAN tags) | outer IPv4/IPv6 (proto 50) | SPI | seq | IV |
//   [inner IP packet | padding 1,2,3,.. | pad length | next header] | ICV
//                     \____________ encrypted ______________________/
//
// The inner packet is the IP datagram as received (its Ethernet trailer padding left out), moved
// right to make room for the headers. Padding is the least that fills the cipher's block (16 for
// AES-CBC) or, for the AEAD ciphers, a 4-byte boundary (RFC 4303 2.4): no TFC padding.
#pragma once

#include <cstdint>

#include "apps/ipsec/sa_file.h"
#include "core/byte_order.h"
#include "core/checksum.h"
#include "core/compiler.h"
#include "core/drop_reason.h"
#include "core/batch.h"
#include "core/parse_impl.h"

namespace tandem::ipsec {

inline constexpr uint8_t kProtoEsp = 50;
inline constexpr uint8_t kNextHeaderIpv4 = 4;   // IP-in-IP
inline constexpr uint8_t kNextHeaderIpv6 = 41;
inline constexpr uint8_t kNextHeaderNone = 59;  // a dummy packet (RFC 4303 2.6): dropped silently
inline constexpr uint32_t kEspHeaderBytes = 8;  // SPI and sequence number
inline constexpr uint8_t kOuterTtl = 64;

// The ipsec app's own drop reasons (core/drop_reason.h app_drop_reason).
inline constexpr DropReason kUnknownSpi = app_drop_reason(0);     // no inbound SA has the SPI
inline constexpr DropReason kReplayed = app_drop_reason(1);       // in the window, seen before
inline constexpr DropReason kTooOld = app_drop_reason(2);         // left of the replay window
inline constexpr DropReason kBadIcv = app_drop_reason(3);         // integrity check failed
inline constexpr DropReason kBadPadding = app_drop_reason(4);     // pad length or bytes wrong
inline constexpr DropReason kBadEspLength = app_drop_reason(5);   // too short, or not whole blocks
inline constexpr DropReason kBadInner = app_drop_reason(6);       // next header or inner packet wrong
inline constexpr DropReason kDummy = app_drop_reason(7);          // next header 59
inline constexpr DropReason kEspFragment = app_drop_reason(8);    // outer fragment: not reassembled
inline constexpr DropReason kSeqOverflow = app_drop_reason(9);    // SA's 32-bit numbers used up
inline constexpr DropReason kTooBig = app_drop_reason(10);        // encapsulated frame does not fit
inline constexpr DropReason kSelectorMismatch = app_drop_reason(11);  // inner addresses outside the SA
inline constexpr DropReason kCryptoError = app_drop_reason(12);   // the crypto library failed

// The app's ports: ESP sent into the tunnel, packets that came out of it, packets no SA selects.
inline constexpr uint32_t kPortTunnel = 0;
inline constexpr uint32_t kPortDecrypted = 1;
inline constexpr uint32_t kPortBypass = 2;
inline constexpr uint32_t kPorts = 3;

// The most an outbound frame grows: an IPv6 outer header, the ESP header, a CBC IV, 15 bytes of
// padding, the trailer and an ICV (the AEAD ciphers add less).
inline constexpr uint32_t kMaxEspGrowth = 40 + 8 + 16 + 15 + 2 + 16;

// What ESP adds around the payload for one cipher.
struct EspShape {
  uint8_t iv_bytes;   // sent after the sequence number
  uint8_t block;      // the encrypted part is a multiple of this
  uint8_t icv_bytes;  // integrity check value after the encrypted part
};

TANDEM_HD_INLINE EspShape esp_shape(Cipher c) {
  if (c == Cipher::kAes128Cbc) return {16, 16, 12};  // RFC 3602, HMAC-SHA1-96 (RFC 2404)
  return {8, 4, 16};                                 // RFC 4106, RFC 7634
}

// The tunnel an SA sends into, as the framing needs it.
struct EspTunnel {
  uint32_t spi;
  uint8_t outer_family;  // 4 or 6
  uint8_t src[16];
  uint8_t dst[16];
  EspShape shape;
};

TANDEM_HD_INLINE uint32_t outer_ip_bytes(uint8_t family) { return family == 4 ? 20 : 40; }

// Where the parts of an ESP frame lie, from the frame's start.
struct EspLayout {
  uint32_t esp;        // SPI
  uint32_t iv;         // esp + 8
  uint32_t payload;    // iv + iv_bytes: the encrypted part starts here
  uint32_t payload_len;  // whole blocks: inner packet, padding, pad length, next header
  uint32_t icv;        // payload + payload_len
  uint32_t frame_len;  // icv + icv_bytes
};

// Copies n bytes from src to dst, the ranges possibly overlapping (memmove).
TANDEM_HD_INLINE void move_bytes(uint8_t* dst, const uint8_t* src, uint32_t n) {
#if defined(__CUDA_ARCH__)
  if (dst > src) {
    for (uint32_t i = n; i > 0; --i) dst[i - 1] = src[i - 1];
  } else {
    for (uint32_t i = 0; i < n; ++i) dst[i] = src[i];
  }
#else
  __builtin_memmove(dst, src, n);
#endif
}

// The least padding that makes inner + padding + 2 a multiple of `block` (RFC 4303 2.4).
TANDEM_HD_INLINE uint32_t esp_pad_bytes(uint32_t inner_len, uint32_t block) {
  return (block - (inner_len + 2) % block) % block;
}

// The frame an outbound SA makes of an inner packet of `inner_len` bytes.
TANDEM_HD_INLINE EspLayout esp_out_layout(const EspTunnel& t, uint32_t inner_len) {
  EspLayout l;
  l.esp = kEthHeaderLen + outer_ip_bytes(t.outer_family);
  l.iv = l.esp + kEspHeaderBytes;
  l.payload = l.iv + t.shape.iv_bytes;
  l.payload_len = inner_len + esp_pad_bytes(inner_len, t.shape.block) + 2;
  l.icv = l.payload + l.payload_len;
  l.frame_len = l.icv + t.shape.icv_bytes;
  return l;
}

// Encapsulates the frame's IP packet (parsed into `pp`) for tunnel `t` with sequence number
// `seq` (its low 32 bits are sent): moves the packet into place, writes the Ethernet and outer IP
// headers, the ESP header, the padding and the trailer, and returns the layout. The IV, the
// encryption and the ICV are the caller's. kTooBig (the frame untouched) when the result would
// pass `cap` bytes or the outer length field.
TANDEM_HD_INLINE DropReason esp_encapsulate(uint8_t* frame, uint32_t cap, const ParsedPacket& pp,
                                           const EspTunnel& t, uint64_t seq, EspLayout* out) {
  const uint32_t inner_len = pp.l3_len;
  const EspLayout l = esp_out_layout(t, inner_len);
  const uint32_t outer_len = l.frame_len - kEthHeaderLen;
  const uint32_t outer_field = t.outer_family == 4 ? outer_len : outer_len - 40;
  if (l.frame_len > cap || outer_field > 0xFFFF) return kTooBig;
  // The inner header's DSCP and ECN go to the outer header (RFC 4301 5.1.2.1, RFC 6040 normal
  // mode: the ECN field copied).
  const uint8_t* inner = frame + pp.l3_off;
  const uint8_t tos = pp.ip_version == 4 ? inner[1] : static_cast<uint8_t>((inner[0] << 4) | (inner[1] >> 4));
  const uint8_t next_header = pp.ip_version == 4 ? kNextHeaderIpv4 : kNextHeaderIpv6;
  move_bytes(frame + l.payload, inner, inner_len);
  store_be16(frame + 12, t.outer_family == 4 ? kEthTypeIpv4 : kEthTypeIpv6);
  uint8_t* ip = frame + kEthHeaderLen;
  if (t.outer_family == 4) {
    ip[0] = 0x45;
    ip[1] = tos;
    store_be16(ip + 2, outer_len);
    store_be16(ip + 4, 0);       // identification: unused with DF set (RFC 6864)
    store_be16(ip + 6, 0x4000);  // DF
    ip[8] = kOuterTtl;
    ip[9] = kProtoEsp;
    store_be16(ip + 10, 0);
    for (int i = 0; i < 4; ++i) ip[12 + i] = t.src[i], ip[16 + i] = t.dst[i];
    store_be16(ip + 10, ipv4_header_checksum(ip, 20));
  } else {
    store_be32(ip, 0x60000000u | (uint32_t{tos} << 20));
    store_be16(ip + 4, outer_len - 40);
    ip[6] = kProtoEsp;
    ip[7] = kOuterTtl;
    for (int i = 0; i < 16; ++i) ip[8 + i] = t.src[i], ip[24 + i] = t.dst[i];
  }
  store_be32(frame + l.esp, t.spi);
  store_be32(frame + l.esp + 4, static_cast<uint32_t>(seq));
  const uint32_t pad = l.payload_len - inner_len - 2;
  uint8_t* trailer = frame + l.payload + inner_len;
  for (uint32_t i = 0; i < pad; ++i) trailer[i] = static_cast<uint8_t>(i + 1);
  trailer[pad] = static_cast<uint8_t>(pad);
  trailer[pad + 1] = next_header;
  *out = l;
  return DropReason::kNone;
}

// An inbound ESP frame before its SA is known: the SPI, the sequence number's low half and where
// the ESP part lies.
struct EspInbound {
  uint32_t spi;
  uint32_t seq_low;
  uint32_t esp;      // offset of the SPI
  uint32_t esp_end;  // end of the outer datagram
};

// Whether a parsed frame is ESP addressed to this gateway's tunnels (protocol 50), and where its
// ESP part lies. kNotHandled for other protocols (the outbound side's), kEspFragment for an outer
// fragment (not reassembled here), kBadEspLength for fewer than the 8 header bytes.
TANDEM_HD_INLINE DropReason esp_inbound(const uint8_t* frame, const ParsedPacket& pp, EspInbound* in) {
  if (pp.tuple.proto != kProtoEsp) return DropReason::kNotHandled;
  if (pp.flags & kFlagFragment) return kEspFragment;
  if (pp.flags & kFlagL4Missing) return kBadEspLength;
  in->esp = pp.l4_off;
  in->esp_end = uint32_t{pp.l3_off} + pp.l3_len;
  if (in->esp_end - in->esp < kEspHeaderBytes) return kBadEspLength;
  in->spi = load_be32(frame + in->esp);
  in->seq_low = load_be32(frame + in->esp + 4);
  return DropReason::kNone;
}

// esp_inbound, then the SA of the frame's SPI by find(spi), which gives `none` for an SPI no
// inbound SA has (kUnknownSpi). Every path's first inbound step, host (SaTable) or GPU (its table).
template <class FindSpi>
TANDEM_HD_INLINE DropReason esp_inbound_sa(const uint8_t* frame, const ParsedPacket& pp, const FindSpi& find,
                                           uint32_t none, EspInbound* in, uint32_t* sa) {
  DropReason r = esp_inbound(frame, pp, in);
  if (r == DropReason::kNone) {
    *sa = find(in->spi);
    if (*sa == none) r = kUnknownSpi;
  }
  return r;
}

// The layout of an inbound ESP frame for its SA's shape; kBadEspLength when the encrypted part
// is empty or not whole blocks.
TANDEM_HD_INLINE DropReason esp_in_layout(const EspInbound& in, const EspShape& s, EspLayout* l) {
  const uint32_t n = in.esp_end - in.esp;
  const uint32_t overhead = kEspHeaderBytes + s.iv_bytes + s.icv_bytes;
  if (n < overhead + s.block || (n - overhead) % s.block != 0) return kBadEspLength;
  l->esp = in.esp;
  l->iv = in.esp + kEspHeaderBytes;
  l->payload = l->iv + s.iv_bytes;
  l->payload_len = n - overhead;
  l->icv = l->payload + l->payload_len;
  l->frame_len = in.esp_end;
  return DropReason::kNone;
}

// After a decryption whose ICV was verified: checks the trailer and the inner packet and moves the
// inner packet right behind the Ethernet header (ethertype set from the next header). Returns the
// new frame length in *len. The checks: the padding (RFC 4303 2.4's 1, 2, 3, ... bytes; a sender
// that pads otherwise is refused, as Linux does), the next header (4 or 41; 59 is kDummy), and an
// inner header of that version whose length is exactly what the padding leaves.
TANDEM_HD_INLINE DropReason esp_decapsulate(uint8_t* frame, const EspLayout& l, uint32_t* len) {
  const uint8_t* payload = frame + l.payload;
  const uint32_t pad = payload[l.payload_len - 2];
  const uint8_t nh = payload[l.payload_len - 1];
  if (pad + 2 > l.payload_len) return kBadPadding;
  const uint32_t inner_len = l.payload_len - 2 - pad;
  for (uint32_t i = 0; i < pad; ++i) {
    if (payload[inner_len + i] != static_cast<uint8_t>(i + 1)) return kBadPadding;
  }
  if (nh == kNextHeaderNone) return kDummy;
  if (nh != kNextHeaderIpv4 && nh != kNextHeaderIpv6) return kBadInner;
  const uint8_t version = nh == kNextHeaderIpv4 ? 4 : 6;
  if (inner_len < (version == 4 ? 20u : 40u) || payload[0] >> 4 != version) return kBadInner;
  const uint32_t claimed = version == 4 ? load_be16(payload + 2) : 40 + load_be16(payload + 4);
  if (claimed != inner_len) return kBadInner;
  store_be16(frame + 12, version == 4 ? kEthTypeIpv4 : kEthTypeIpv6);
  move_bytes(frame + kEthHeaderLen, payload, inner_len);
  *len = kEthHeaderLen + inner_len;
  return DropReason::kNone;
}

// The bytes an inbound SA authenticates beyond the packet with extended sequence numbers (the
// high half of the sequence number, RFC 4303 2.2.1), or the AEAD ciphers' additional data: SPI,
// then [high half,] low half (RFC 4106 5, RFC 7634 2.1). Returns the AAD's length (8 or 12).
TANDEM_HD_INLINE uint32_t esp_aad(uint32_t spi, uint64_t seq, bool esn, uint8_t* aad) {
  store_be32(aad, spi);
  if (esn) {
    store_be32(aad + 4, static_cast<uint32_t>(seq >> 32));
    store_be32(aad + 8, static_cast<uint32_t>(seq));
    return 12;
  }
  store_be32(aad + 4, static_cast<uint32_t>(seq));
  return 8;
}

// The AEAD ciphers' 12-byte nonce: the SA's 4-byte salt, then the packet's 8-byte IV (RFC 4106 4,
// RFC 7634 2).
TANDEM_HD_INLINE void esp_aead_nonce(const uint8_t* salt, const uint8_t* iv, uint8_t* nonce) {
  for (int i = 0; i < 4; ++i) nonce[i] = salt[i];
  for (int i = 0; i < 8; ++i) nonce[4 + i] = iv[i];
}

// The IV an outbound SA sends with sequence number `seq`.
//  - AEAD: the 64-bit sequence number itself (unique per key, as RFC 4106 3.1 and RFC 7634 2
//    allow; the SA table refuses two outbound SAs with one key).
//  - AES-CBC: the block SPI | 0 | seq is written in the IV's place and encrypted with the SA's
//    key as the first block of a CBC pass with a zero IV: its ciphertext, E_K(SPI | 0 | seq), is
//    the IV, and the rest of the pass is exactly CBC under that IV. An IV made by encrypting a
//    unique nonce under the data key is unpredictable (NIST SP 800-38A appendix C), and the same
//    on every path, so the CPU and the GPU give the same bytes.
TANDEM_HD_INLINE void esp_iv_seed(Cipher c, uint32_t spi, uint64_t seq, uint8_t* iv) {
  if (c == Cipher::kAes128Cbc) {
    store_be32(iv, spi);
    store_be32(iv + 4, 0);
    iv += 8;
  }
  store_be32(iv, static_cast<uint32_t>(seq >> 32));
  store_be32(iv + 4, static_cast<uint32_t>(seq));
}

}  // namespace tandem::ipsec
