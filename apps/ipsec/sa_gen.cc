#include "apps/ipsec/sa_gen.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "apps/ipsec/ipsec_app.h"
#include "core/byte_order.h"
#include "core/rng.h"
#include "core/usage_error.h"
#include "io/flow_traffic.h"

namespace tandem::ipsec {

namespace {

IpAddr v4(uint32_t a) {
  IpAddr x;
  x.family = 4;
  store_be32(x.bytes.data(), a);
  return x;
}

IpPrefix host(const IpAddr& a) { return {a, static_cast<uint8_t>(a.family == 4 ? 32 : 128)}; }

std::vector<uint8_t> random_bytes(Rng& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng.next());
  return v;
}

std::string hex(const std::vector<uint8_t>& v) {
  std::string s = "0x";
  char buf[3];
  for (uint8_t b : v) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    s += buf;
  }
  return s;
}

// An address inside prefix p, the host bits random.
void random_in(Rng& rng, const IpPrefix& p, uint8_t* out) {
  const uint32_t bytes = p.addr.family == 4 ? 4 : 16;
  for (uint32_t i = 0; i < bytes; ++i) {
    const uint32_t fixed = p.len >= 8 * (i + 1) ? 8 : p.len > 8 * i ? p.len - 8 * i : 0;
    const uint8_t mask = static_cast<uint8_t>(0xFF00 >> fixed);
    out[i] = static_cast<uint8_t>((p.addr.bytes[i] & mask) | (rng.next() & ~mask));
  }
}

// Cleartext flows for the SAs `sas` of `table` (selector holders), or uniform ones.
PacketStore cleartext(const SaTable& table, const std::vector<uint32_t>& sas, const GenSpec& spec) {
  const int family = sas.empty() ? 4 : table.sa(sas[0]).sel_src.addr.family;
  std::vector<uint32_t> same;
  for (uint32_t i : sas) {
    if (table.sa(i).sel_src.addr.family == family) same.push_back(i);
  }
  return generate_flows(spec, family, [&](Rng& rng, GenFlow& f) {
    if (spec.dst == GenSpec::Dst::kFib && !same.empty()) {
      const Sa& sa = table.sa(same[rng.below(same.size())]);
      random_in(rng, sa.sel_src, f.src);
      random_in(rng, sa.sel_dst, f.dst);
    } else if (family == 4) {
      store_be32(f.dst, uniform_unicast_ipv4(rng));
    } else {
      for (int i = 0; i < 16; ++i) f.dst[i] = static_cast<uint8_t>(rng.next());
      f.dst[0] = static_cast<uint8_t>(0x20 | (f.dst[0] & 0x1F));  // 2000::/3
    }
  });
}

PacketStore outbound_traffic(const SaTable& table, const GenSpec& spec) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < table.size(); ++i) {
    if (table.sa(i).dir == SaDir::kOut) out.push_back(i);
  }
  return cleartext(table, out, spec);
}

PacketStore inbound_traffic(const SaTable& table, const GenSpec& spec) {
  SaTable peer(mirrored_sas(table));
  std::vector<uint32_t> all(peer.size());
  for (uint32_t i = 0; i < peer.size(); ++i) all[i] = i;
  const PacketStore clear = cleartext(peer, all, spec);
  IpsecApp app(peer);
  PacketStore esp;
  std::vector<uint8_t> room;
  for (size_t i = 0; i < clear.size(); ++i) {
    room.assign(clear.frame(i), clear.frame(i) + clear.caplen[i]);
    room.resize(room.size() + kMaxEspGrowth);
    uint32_t len = clear.caplen[i];
    const uint32_t v = app.process(room.data(), &len, static_cast<uint32_t>(room.size()));
    if (Verdict::is_drop(v) || Verdict::port(v) != kPortTunnel) continue;  // uniform addresses no SA holds
    esp.add(room.data(), len, len, clear.ts_ns[i]);
  }
  return esp;
}

}  // namespace

Cipher cipher_by_name(const std::string& name) {
  for (Cipher c : {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305}) {
    if (name == cipher_name(c)) return c;
  }
  throw UsageError("cipher '" + name + "': aes-128-cbc, aes-128-gcm, aes-256-gcm or chacha20-poly1305");
}

SaFile generated_sas(uint64_t n, Cipher cipher, uint64_t seed) {
  if (n == 0 || n > kMaxGeneratedSas) {
    throw UsageError("--sa-gen " + std::to_string(n) + ": 1 to " + std::to_string(kMaxGeneratedSas) + " SAs");
  }
  SaFile f;
  f.path = "generated";
  Rng rng(seed, 0x5a);
  const IpAddr gw = v4(0xC0000201), peer = v4(0xC6336401);  // 192.0.2.1, 198.51.100.1
  for (uint64_t k = 0; k < n; ++k) {
    const IpAddr a = v4(0x0A000000u + static_cast<uint32_t>(k) + 1), b = v4(0xAC100000u + static_cast<uint32_t>(k) + 1);
    for (SaDir dir : {SaDir::kOut, SaDir::kIn}) {
      Sa sa;
      sa.dir = dir;
      sa.spi = static_cast<uint32_t>((dir == SaDir::kOut ? 0x10000 : 0x20000) + k);
      sa.src = dir == SaDir::kOut ? gw : peer;
      sa.dst = dir == SaDir::kOut ? peer : gw;
      sa.cipher = cipher;
      sa.key = random_bytes(rng, cipher_key_bytes(cipher));
      sa.salt = random_bytes(rng, cipher_salt_bytes(cipher));
      if (cipher == Cipher::kAes128Cbc) {
        sa.auth = Auth::kHmacSha1_96;
        sa.auth_key = random_bytes(rng, 20);
      }
      sa.sel_src = host(dir == SaDir::kOut ? a : b);
      sa.sel_dst = host(dir == SaDir::kOut ? b : a);
      sa.has_selector = true;
      sa.line = f.sas.size() + 1;
      f.sas.push_back(std::move(sa));
    }
  }
  return f;
}

std::string format_sa_line(const Sa& sa) {
  std::string s = std::string("dir=") + (sa.dir == SaDir::kOut ? "out" : "in");
  char spi[16];
  std::snprintf(spi, sizeof spi, "0x%x", sa.spi);
  s += std::string(" spi=") + spi + " src=" + format_addr(sa.src) + " dst=" + format_addr(sa.dst);
  std::vector<uint8_t> key = sa.key;
  key.insert(key.end(), sa.salt.begin(), sa.salt.end());
  s += std::string(" cipher=") + cipher_name(sa.cipher) + " key=" + hex(key);
  if (sa.auth == Auth::kHmacSha1_96) s += " auth=hmac-sha1-96 authkey=" + hex(sa.auth_key);
  if (sa.has_selector) s += " selector=" + format_prefix(sa.sel_src) + "," + format_prefix(sa.sel_dst);
  if (sa.dir == SaDir::kIn && sa.replay_window != 64) s += " replay-window=" + std::to_string(sa.replay_window);
  if (sa.esn) s += " esn=yes";
  return s;
}

SaFile mirrored_sas(const SaTable& inbound) {
  SaFile f;
  f.path = inbound.path() + " (mirrored)";
  for (uint32_t i = 0; i < inbound.size(); ++i) {
    Sa sa = inbound.sa(i);
    if (sa.dir != SaDir::kIn) continue;
    sa.dir = SaDir::kOut;
    if (!sa.has_selector) {
      sa.sel_src = sa.sel_dst = IpPrefix{};
      sa.sel_src.addr.family = sa.sel_dst.addr.family = 4;
      sa.has_selector = true;
    }
    f.sas.push_back(std::move(sa));
  }
  return f;
}

PacketStore generate_esp_traffic(const SaTable& table, const GenSpec& spec, const std::string& traffic) {
  if (traffic == "out") return outbound_traffic(table, spec);
  if (traffic == "in") return inbound_traffic(table, spec);
  if (traffic != "both") throw std::invalid_argument("ipsec traffic '" + traffic + "': out, in or both");
  GenSpec half = spec;
  half.count = spec.count - spec.count / 2;
  const PacketStore out = outbound_traffic(table, half);
  half.count = spec.count / 2;
  half.seed = spec.seed + 1;
  const PacketStore in = half.count ? inbound_traffic(table, half) : PacketStore{};
  PacketStore mixed;
  for (size_t i = 0; i < std::max(out.size(), in.size()); ++i) {
    if (i < out.size()) mixed.add(out.frame(i), out.caplen[i], out.wire_len[i], out.ts_ns[i]);
    if (i < in.size()) mixed.add(in.frame(i), in.caplen[i], in.wire_len[i], in.ts_ns[i]);
  }
  return mixed;
}

}  // namespace tandem::ipsec
