#include "apps/ipsec/sa_file.h"

#include <openssl/crypto.h>

#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "apps/ipsec/replay_window.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv6/fib6_loader.h"
#include "core/table_reader.h"

namespace tandem::ipsec {

const char* cipher_name(Cipher c) {
  switch (c) {
    case Cipher::kAes128Cbc: return "aes-128-cbc";
    case Cipher::kAes128Gcm: return "aes-128-gcm";
    case Cipher::kAes256Gcm: return "aes-256-gcm";
    case Cipher::kChacha20Poly1305: return "chacha20-poly1305";
  }
  return "unknown";
}

const char* auth_name(Auth a) { return a == Auth::kHmacSha1_96 ? "hmac-sha1-96" : "none"; }

uint32_t cipher_key_bytes(Cipher c) {
  return c == Cipher::kAes128Cbc || c == Cipher::kAes128Gcm ? 16 : 32;
}
uint32_t cipher_salt_bytes(Cipher c) { return c == Cipher::kAes128Cbc ? 0 : 4; }

bool IpPrefix::contains(const IpAddr& a) const {
  return a.family == addr.family && prefix_holds(addr.bytes.data(), len, a.bytes.data());
}

std::string format_addr(const IpAddr& a) {
  if (a.family == 4) {
    return ipv4::format_ipv4(uint32_t{a.bytes[0]} << 24 | uint32_t{a.bytes[1]} << 16 | uint32_t{a.bytes[2]} << 8 |
                             a.bytes[3]);
  }
  return ipv6::format_ipv6(a.bytes.data());
}

std::string format_prefix(const IpPrefix& p) { return format_addr(p.addr) + "/" + std::to_string(p.len); }

namespace {

bool parse_addr(std::string_view s, IpAddr* out) {
  uint32_t v4 = 0;
  if (ipv4::parse_ipv4_addr(s.data(), s.data() + s.size(), &v4)) {
    *out = IpAddr{};
    out->family = 4;
    for (int i = 0; i < 4; ++i) out->bytes[i] = static_cast<uint8_t>(v4 >> (24 - 8 * i));
    return true;
  }
  ipv6::Addr6 a6{};
  if (ipv6::parse_ipv6_addr(s.data(), s.data() + s.size(), &a6)) {
    out->family = 6;
    std::memcpy(out->bytes.data(), a6.data(), 16);
    return true;
  }
  return false;
}

bool parse_prefix(std::string_view s, IpPrefix* out, std::string* why) {
  uint32_t v4 = 0;
  uint8_t len = 0;
  if (s.find(':') == std::string_view::npos) {
    if (!ipv4::parse_ipv4_prefix(s.data(), s.data() + s.size(), &v4, &len, why)) return false;
    out->addr = IpAddr{};
    out->addr.family = 4;
    for (int i = 0; i < 4; ++i) out->addr.bytes[i] = static_cast<uint8_t>(v4 >> (24 - 8 * i));
  } else {
    ipv6::Addr6 a6{};
    if (!ipv6::parse_ipv6_prefix(s.data(), s.data() + s.size(), &a6, &len, why)) return false;
    out->addr = IpAddr{};
    out->addr.family = 6;
    std::memcpy(out->addr.bytes.data(), a6.data(), 16);
  }
  out->len = len;
  // Host bits are cleared: the selector names a network.
  for (uint32_t bit = len; bit < (out->addr.family == 4 ? 32u : 128u); ++bit) {
    out->addr.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  }
  return true;
}

bool parse_hex(std::string_view s, std::vector<uint8_t>* out) {
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() % 2) return false;
  out->clear();
  out->reserve(s.size() / 2);  // no reallocation leaves a copy of key bytes behind
  for (size_t i = 0; i < s.size(); i += 2) {
    int v = 0;
    for (size_t j = i; j < i + 2; ++j) {
      const char c = s[j];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    out->push_back(static_cast<uint8_t>(v));
  }
  return true;
}

bool parse_u32(std::string_view s, uint32_t* out) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : -1;
    if (base == 16) d = c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : d;
    if (d < 0 || d >= base) return false;
    v = v * base + d;
  }
  if (v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool no(std::string* why, std::string what) {
  *why = std::move(what);
  return false;
}

const std::set<std::string_view> kFields = {"dir", "spi", "src", "dst", "cipher", "key", "auth", "authkey",
                                            "selector", "replay-window", "esn"};

}  // namespace

bool parse_sa_spi(std::string_view text, uint32_t* spi, std::string* why) {
  if (!parse_u32(text, spi)) return no(why, "spi is not a 32-bit number (0x... or decimal)");
  if (*spi < 256) return no(why, "spi " + std::to_string(*spi) + " is reserved (RFC 4303: 0-255)");
  return true;
}

// A line may carry keys in any shape a user mistypes (`key = HEX`, quoted, split by commas, under a
// misspelt name): messages name the field, and never quote the line.
bool parse_sa_line(std::string_view line, Sa* out, std::string* why) {
  std::map<std::string_view, std::string_view> f;
  for (size_t pos = 0; pos < line.size();) {
    const size_t b = line.find_first_not_of(" \t\r", pos);
    if (b == std::string_view::npos) break;
    const size_t e = std::min(line.find_first_of(" \t\r", b), line.size());
    const std::string_view tok = line.substr(b, e - b);
    pos = e;
    const size_t eq = tok.find('=');
    if (eq == std::string_view::npos || eq == 0) return no(why, "not a key=value field");
    const std::string_view name = tok.substr(0, eq);
    if (!kFields.count(name)) {
      // Quoted only when it reads as a name: a key typed in the wrong place is not echoed.
      const bool wordlike = name.size() <= 24 && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ-_") ==
                                                     std::string_view::npos;
      return no(why, wordlike ? "unknown field '" + std::string(name) + "'" : std::string("unknown field"));
    }
    if (!f.emplace(name, tok.substr(eq + 1)).second) return no(why, "field " + std::string(name) + " given twice");
  }
  // The value of a field that must be there, or empty with *why set.
  auto need = [&](std::string_view name) -> std::string_view {
    const auto it = f.find(name);
    if (it == f.end()) {
      no(why, "missing field " + std::string(name));
      return {};
    }
    if (it->second.empty()) no(why, "empty field " + std::string(name));
    return it->second;
  };
  Sa sa;
  // A refused line's keys are wiped; an accepted one's have moved to *out.
  struct WipeSa {
    Sa& s;
    ~WipeSa() { wipe_keys(&s); }
  } wipe_sa{sa};
  const std::string_view dir = need("dir");
  if (dir.empty()) return false;
  if (dir == "out") {
    sa.dir = SaDir::kOut;
  } else if (dir == "in") {
    sa.dir = SaDir::kIn;
  } else {
    return no(why, "dir must be out or in");
  }
  const std::string_view spi = need("spi");
  if (spi.empty() || !parse_sa_spi(spi, &sa.spi, why)) return false;
  const std::string_view src = need("src");
  if (src.empty()) return false;
  if (!parse_addr(src, &sa.src)) return no(why, "src is not an IPv4 or IPv6 address");
  const std::string_view dst = need("dst");
  if (dst.empty()) return false;
  if (!parse_addr(dst, &sa.dst)) return no(why, "dst is not an IPv4 or IPv6 address");
  if (sa.src.family != sa.dst.family) return no(why, "src and dst are of different families");

  const std::string_view cipher = need("cipher");
  if (cipher.empty()) return false;
  bool known = false;
  for (Cipher c : {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305}) {
    if (cipher == cipher_name(c)) {
      sa.cipher = c;
      known = true;
    }
  }
  if (!known) return no(why, "cipher must be aes-128-cbc, aes-128-gcm, aes-256-gcm or chacha20-poly1305");
  const std::string_view key_text = need("key");
  if (key_text.empty()) return false;
  std::vector<uint8_t> key;
  // The key and salt in one buffer, wiped however this returns.
  struct Wipe {
    std::vector<uint8_t>& v;
    ~Wipe() { OPENSSL_cleanse(v.data(), v.size()); }
  } wipe{key};
  if (!parse_hex(key_text, &key)) return no(why, "key is not a hex string");
  const uint32_t kb = cipher_key_bytes(sa.cipher), sb = cipher_salt_bytes(sa.cipher);
  if (key.size() != kb + sb) {
    return no(why, std::string("key of ") + std::to_string(key.size()) + " bytes: " + cipher_name(sa.cipher) +
                       " takes " + std::to_string(kb + sb) + (sb ? " (the key, then a 4-byte salt)" : ""));
  }
  sa.key.assign(key.begin(), key.begin() + kb);
  sa.salt.assign(key.begin() + kb, key.end());

  const auto auth = f.find("auth");
  const std::string_view auth_text = auth == f.end() ? std::string_view("none") : auth->second;
  if (auth_text == "hmac-sha1-96") {
    sa.auth = Auth::kHmacSha1_96;
  } else if (auth_text != "none") {
    return no(why, "auth must be hmac-sha1-96 or none");
  }
  if (sa.cipher == Cipher::kAes128Cbc && sa.auth == Auth::kNone) {
    return no(why, "aes-128-cbc needs auth=hmac-sha1-96 (ESP without integrity is refused)");
  }
  if (sa.cipher != Cipher::kAes128Cbc && sa.auth != Auth::kNone) {
    return no(why, std::string(cipher_name(sa.cipher)) + " authenticates by itself: auth must be none");
  }
  if (sa.auth == Auth::kHmacSha1_96) {
    const std::string_view authkey = need("authkey");
    if (authkey.empty()) return false;
    if (!parse_hex(authkey, &sa.auth_key)) return no(why, "authkey is not a hex string");
    if (sa.auth_key.size() != 20) {
      return no(why, "authkey of " + std::to_string(sa.auth_key.size()) + " bytes: hmac-sha1-96 takes 20");
    }
  } else if (f.count("authkey")) {
    return no(why, "authkey without auth=hmac-sha1-96");
  }

  // Outbound: which packets the SA protects (required). Inbound: which inner packets it may carry
  // (optional; RFC 4301 5.2 checks decapsulated packets against the SA's selectors).
  if (sa.dir == SaDir::kOut || f.count("selector")) {
    const std::string_view sel = need("selector");
    if (sel.empty()) return false;
    const size_t comma = sel.find(',');
    if (comma == std::string_view::npos) return no(why, "selector must be SRC_PREFIX,DST_PREFIX");
    std::string e;
    if (!parse_prefix(sel.substr(0, comma), &sa.sel_src, &e)) return no(why, "selector source: " + e);
    if (!parse_prefix(sel.substr(comma + 1), &sa.sel_dst, &e)) return no(why, "selector destination: " + e);
    if (sa.sel_src.addr.family != sa.sel_dst.addr.family) return no(why, "selector prefixes of different families");
    sa.has_selector = true;
  }
  if (sa.dir == SaDir::kOut) {
    if (f.count("replay-window")) return no(why, "replay-window is for inbound SAs (dir=in)");
  } else {
    if (const auto it = f.find("replay-window"); it != f.end()) {
      if (!parse_u32(it->second, &sa.replay_window) ||
          (sa.replay_window != 0 &&
           (sa.replay_window < ReplayWindow::kMinSize || sa.replay_window > ReplayWindow::kMaxSize))) {
        return no(why, "replay-window must be 0 (off) or " + std::to_string(ReplayWindow::kMinSize) + " to " +
                           std::to_string(ReplayWindow::kMaxSize) + " packets");
      }
    }
  }
  if (const auto it = f.find("esn"); it != f.end()) {
    if (it->second != "yes" && it->second != "no") return no(why, "esn must be yes or no");
    sa.esn = it->second == "yes";
  }
  if (sa.dir == SaDir::kIn && sa.esn && sa.replay_window == 0) {
    return no(why, "esn=yes needs a replay window: the high half of a sequence number is inferred from it");
  }
  *out = std::move(sa);
  return true;
}

void wipe_keys(Sa* sa) {
  for (std::vector<uint8_t>* v : {&sa->key, &sa->salt, &sa->auth_key}) {
    OPENSSL_cleanse(v->data(), v->size());
    v->clear();
    v->shrink_to_fit();
  }
}

std::string_view sa_line_text(std::string_view line) {
  const size_t hash = line.find('#');
  return hash == std::string_view::npos ? line : line.substr(0, hash);
}

namespace {

[[noreturn]] void fail(const LineReader& in, const std::string& what) {
  throw TableError(in.name() + ":" + std::to_string(in.line_number()) + ": " + what);
}

}  // namespace

SaFile load_sa_file(const std::string& path) {
  LineReader in(path);
  SaFile file;
  file.path = path;
  std::set<std::pair<SaDir, uint32_t>> spis;
  for (std::string_view line; in.next(&line);) {
    line = sa_line_text(line);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Sa sa;
    if (std::string why; !parse_sa_line(line, &sa, &why)) fail(in, why);
    sa.line = in.line_number();
    if (!spis.emplace(sa.dir, sa.spi).second) {
      fail(in, std::string("a second ") + (sa.dir == SaDir::kIn ? "inbound" : "outbound") + " SA with spi " +
              std::to_string(sa.spi));
    }
    file.sas.push_back(std::move(sa));
  }
  if (file.sas.empty()) throw TableError(path + ": no SA");
  return file;
}

bool parse_ip_prefix(std::string_view text, IpPrefix* out, std::string* why) { return parse_prefix(text, out, why); }

}  // namespace tandem::ipsec
