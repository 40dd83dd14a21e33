// Security associations of the IPsec gateway, read from an SA file: one SA per line of
// whitespace-separated `key=value` fields ('#' starts a comment), as `ip xfrm state` describes
// them:
//
//   dir=out spi=0x1001 src=192.0.2.1 dst=198.51.100.1 cipher=aes-128-cbc key=HEX
//       auth=hmac-sha1-96 authkey=HEX selector=10.1.0.0/16,10.2.0.0/16
//   dir=in spi=0x2001 src=198.51.100.1 dst=192.0.2.1 cipher=aes-128-gcm key=HEX(16 + 4 salt)
//       [replay-window=64] [esn=yes|no]
//
// Fields: dir (out | in), spi (hex 0x... or decimal; 256 and up, RFC 4303 reserves 1-255), src
// and dst (the tunnel endpoints, IPv4 or IPv6, one family), cipher (aes-128-cbc, aes-128-gcm,
// aes-256-gcm, chacha20-poly1305), key (hex; for GCM and ChaCha20-Poly1305 the cipher key then the
// 4-byte salt, as RFC 4106/7634 and `ip xfrm` write it), auth (hmac-sha1-96 with aes-128-cbc,
// which needs it; none or absent with the AEAD ciphers), authkey (hex, 20 bytes for HMAC-SHA1),
// selector (SRC_PREFIX,DST_PREFIX: outbound, required, the packets the SA protects; inbound,
// optional, the inner packets it may deliver: others are dropped after decryption),
// replay-window (inbound, 32 to 1 Mi packets, default 64; 0 turns the check off), esn.
//
// Errors name the file, the line and the field, and never quote the line: no key reaches a message,
// however it was mistyped.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/compiler.h"

namespace tandem::ipsec {

enum class SaDir : uint8_t { kOut, kIn };
enum class Cipher : uint8_t { kAes128Cbc, kAes128Gcm, kAes256Gcm, kChacha20Poly1305 };
enum class Auth : uint8_t { kNone, kHmacSha1_96 };

const char* cipher_name(Cipher c);
const char* auth_name(Auth a);
// Bytes of the cipher key proper (without the salt), and of the salt (0 for CBC).
uint32_t cipher_key_bytes(Cipher c);
uint32_t cipher_salt_bytes(Cipher c);

// An IPv4 (first 4 bytes used) or IPv6 address, network order.
struct IpAddr {
  uint8_t family = 0;  // 4 or 6
  std::array<uint8_t, 16> bytes{};
  bool operator==(const IpAddr&) const = default;
};
// Whether address `a` lies in the prefix of `len` bits at `prefix` (network order, host bits zero):
// the selectors' test, on the host and the GPU.
TANDEM_HD_INLINE bool prefix_holds(const uint8_t* prefix, uint32_t len, const uint8_t* a) {
  const uint32_t full = len / 8, rest = len % 8;
  for (uint32_t i = 0; i < full; ++i) {
    if (a[i] != prefix[i]) return false;
  }
  return rest == 0 || (a[full] & static_cast<uint8_t>(0xFF00 >> rest)) == prefix[full];
}

struct IpPrefix {
  IpAddr addr;  // the host bits are zero
  uint8_t len = 0;
  // Whether `a` (of the same family) lies in the prefix.
  bool contains(const IpAddr& a) const;
};

std::string format_addr(const IpAddr& a);
// Parses "ADDR/LEN" (IPv4 or IPv6; host bits cleared); false with *why otherwise.
bool parse_ip_prefix(std::string_view text, IpPrefix* out, std::string* why);
std::string format_prefix(const IpPrefix& p);

struct Sa {
  SaDir dir = SaDir::kOut;
  uint32_t spi = 0;
  IpAddr src, dst;  // tunnel endpoints
  Cipher cipher = Cipher::kAes128Cbc;
  std::vector<uint8_t> key;   // the cipher key proper
  std::vector<uint8_t> salt;  // GCM and ChaCha20-Poly1305: 4 bytes
  Auth auth = Auth::kNone;
  std::vector<uint8_t> auth_key;
  IpPrefix sel_src, sel_dst;  // outbound: the packets it protects; inbound: what it may deliver
  bool has_selector = false;  // always for outbound SAs
  uint32_t replay_window = 64;  // inbound; 0: no check
  bool esn = false;
  uint64_t line = 0;  // in the file
};

struct SaFile {
  std::string path;
  std::vector<Sa> sas;  // in file order (outbound selectors are tried in this order)
};

// Parses one SA, the fields of one line of an SA file (without its comment: sa_line_text); false
// with *why (naming the field, never quoting the line) when the line is malformed or its fields do
// not fit together. Leaves Sa::line 0.
bool parse_sa_line(std::string_view line, Sa* sa, std::string* why);
// A line without its comment ('#' to the end).
std::string_view sa_line_text(std::string_view line);
// An SPI as SA files write it (0x... or decimal, 256 and up); false with *why otherwise.
bool parse_sa_spi(std::string_view text, uint32_t* spi, std::string* why);
// Wipes an SA's key material (OPENSSL_cleanse) and frees it.
void wipe_keys(Sa* sa);

// Reads an SA file; throws TableError("PATH:LINE: ...") for any malformed line, a missing or
// repeated field, a field that does not fit the SA's direction or cipher, a key of the wrong
// length, and two SAs of one direction with the same SPI (inbound ones are found by SPI).
SaFile load_sa_file(const std::string& path);

}  // namespace tandem::ipsec
