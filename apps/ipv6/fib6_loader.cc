#include "apps/ipv6/fib6_loader.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "core/flow_hash.h"
#include "core/batch.h"
#include "core/table_reader.h"
#include "io/mrt.h"

namespace tandem::ipv6 {

namespace {

uint64_t high64(const uint8_t* a) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | a[i];
  return v;
}
uint64_t low64(const uint8_t* a) { return high64(a + 8); }

// Reproducible random numbers: splitmix64's counter through core/flow_hash.h's mix64.
struct Rng {
  uint64_t state;
  uint64_t next() { return mix64(state += 0x9E3779B97F4A7C15ULL); }
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
  void fill(uint8_t* out16) {
    const uint64_t hi = next(), lo = next();
    for (int i = 0; i < 8; ++i) {
      out16[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
      out16[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
    }
  }
};

}  // namespace

bool parse_ipv6_addr(const char* b, const char* e, Addr6* addr) {
  char text[INET6_ADDRSTRLEN + 1];
  const size_t n = static_cast<size_t>(e - b);
  if (n == 0 || n > INET6_ADDRSTRLEN) return false;
  std::memcpy(text, b, n);
  text[n] = '\0';
  return inet_pton(AF_INET6, text, addr->data()) == 1;
}

bool parse_ipv6_prefix(const char* b, const char* e, Addr6* addr, uint8_t* len, std::string* why) {
  const char* slash = static_cast<const char*>(std::memchr(b, '/', static_cast<size_t>(e - b)));
  if (!slash) {
    *why = "missing /length";
    return false;
  }
  if (!parse_ipv6_addr(b, slash, addr)) {
    *why = "bad IPv6 address";
    return false;
  }
  uint64_t l = 0;
  if (!parse_decimal(std::string_view(slash + 1, static_cast<size_t>(e - slash - 1)), 999, &l)) {
    *why = "bad prefix length";
    return false;
  }
  if (l > 128) {
    *why = "prefix length " + std::to_string(l) + " is over 128";
    return false;
  }
  *len = static_cast<uint8_t>(l);
  return true;
}

std::string format_ipv6(const uint8_t addr[16]) {
  char text[INET6_ADDRSTRLEN];
  return inet_ntop(AF_INET6, addr, text, sizeof text) ? text : "?";
}

uint32_t derived_next_hop6(const uint8_t prefix[16], uint8_t len, uint32_t ports) {
  return static_cast<uint32_t>(mix64(mix64(high64(prefix) ^ len) ^ low64(prefix)) % (ports ? ports : 1));
}

namespace {

Fib6 load_fib6_mrt(const std::string& path, const Fib6LoadOptions& opts) {
  Fib6 fib;
  fib.path = path;
  const mrt::FirstRouteStats st = mrt::read_first_routes(path, 6, [&](const mrt::FirstRoute& f) {
    Route6 x{};
    std::memcpy(x.prefix.data(), f.prefix, 16);
    x.len = f.len;
    fib.host_bits_cleared += f.host_bits_cleared;
    if (f.has_next_hop) {
      if (f.port > Verdict::kMaxPort) throw Fib6Error(path + ": more than 2^24 - 1 distinct next hops");
      x.next_hop = f.port;
    } else {
      x.next_hop = derived_next_hop6(x.prefix.data(), x.len, opts.derive_ports);
      ++fib.derived_next_hops;
    }
    fib.routes.push_back(x);
  });
  fib.mrt_records = fib.lines = st.records;
  fib.other_paths = st.other_paths;
  fib.ipv4_skipped = st.other_family;
  fib.next_hop_addresses = st.next_hop_addresses;
  for (const Route6& r : fib.routes) fib.max_next_hop = std::max(fib.max_next_hop, r.next_hop);
  return fib;
}

}  // namespace

Fib6 load_fib6(const std::string& path, const Fib6LoadOptions& opts) {
  if (mrt::looks_like_mrt(path)) {
    try {
      return load_fib6_mrt(path, opts);
    } catch (const mrt::MrtError& e) {
      throw Fib6Error(e.what());
    }
  }
  Fib6 fib;
  fib.path = path;
  // key: the prefix's 128 bits and its length -> index in routes, so duplicates replace in place.
  struct Key {
    uint64_t hi, lo;
    uint8_t len;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(mix64(k.hi ^ mix64(k.lo ^ k.len))); }
  };
  std::unordered_map<Key, size_t, KeyHash> seen;
  try {
    TableReader in(path);
    TableReader::Column col[2];
    for (int ncol; (ncol = in.next(col, 2, "too many columns (expected PREFIX/LEN [NEXTHOP])")) > 0;) {
      std::string why;
      if (!col[0].contains(':')) {
        // Not IPv6: it must still be a well-formed IPv4 prefix to be skipped.
        uint32_t v4 = 0;
        uint8_t v4_len = 0;
        if (!ipv4::parse_ipv4_prefix(col[0].b, col[0].e, &v4, &v4_len, &why)) in.fail(why);
        ++fib.ipv4_skipped;
        continue;
      }
      Route6 r{};
      if (!parse_ipv6_prefix(col[0].b, col[0].e, &r.prefix, &r.len, &why)) in.fail(why);
      Addr6 masked;
      lpm6_mask(r.prefix.data(), r.len, masked.data());
      if (masked != r.prefix) ++fib.host_bits_cleared;
      r.prefix = masked;
      if (ncol == 2) {
        uint64_t nh = 0;
        if (!parse_decimal(col[1].view(), Verdict::kMaxPort, &nh)) in.fail("next hop must be an integer 0..16777214 (16777215 marks a flood)");
        r.next_hop = static_cast<uint32_t>(nh);
      } else {
        r.next_hop = derived_next_hop6(r.prefix.data(), r.len, opts.derive_ports);
        ++fib.derived_next_hops;
      }
      // Room for a full table once the file looks like one; a small file does not pay for it.
      if (fib.routes.size() == 4096) seen.reserve(1 << 18);
      auto [it, inserted] = seen.emplace(Key{high64(r.prefix.data()), low64(r.prefix.data()), r.len},
                                         fib.routes.size());
      if (inserted) {
        fib.routes.push_back(r);
      } else {
        fib.duplicates.add(in, fib.routes[it->second].next_hop != r.next_hop);
        fib.routes[it->second] = r;
      }
    }
    fib.lines = in.line_number();
  } catch (const TableError& e) {
    throw Fib6Error(e.what());
  }
  for (const Route6& r : fib.routes) fib.max_next_hop = std::max(fib.max_next_hop, r.next_hop);
  return fib;
}

std::vector<Route6> random_table(size_t n, int min_len, int max_len, uint64_t seed) {
  min_len = std::clamp(min_len, 0, 128);
  max_len = std::clamp(max_len, min_len, 128);
  // Distinct prefixes: at most 2^len of each length exist, so stop trying after enough repeats.
  Rng rng{seed};
  std::vector<Route6> routes;
  routes.reserve(n);
  struct KeyHash {
    size_t operator()(const std::pair<Addr6, uint8_t>& k) const {
      return static_cast<size_t>(mix64(high64(k.first.data()) ^ mix64(low64(k.first.data()) ^ k.second)));
    }
  };
  std::unordered_set<std::pair<Addr6, uint8_t>, KeyHash> seen;
  seen.reserve(n);
  for (size_t tries = 0; routes.size() < n && tries < 4 * n + 1000; ++tries) {
    Route6 r{};
    rng.fill(r.prefix.data());
    r.len = static_cast<uint8_t>(min_len + static_cast<int>(rng.below(static_cast<uint64_t>(max_len - min_len + 1))));
    lpm6_mask(r.prefix.data(), r.len, r.prefix.data());
    if (!seen.insert({r.prefix, r.len}).second) continue;
    r.next_hop = derived_next_hop6(r.prefix.data(), r.len, 16);
    routes.push_back(r);
  }
  return routes;
}

std::vector<Addr6> sample_addresses(const std::vector<Route6>& table, size_t n, uint64_t seed) {
  Rng rng{seed};
  std::vector<Addr6> out(table.empty() ? 0 : n);
  for (Addr6& a : out) {
    const Route6& r = table[rng.below(table.size())];
    Addr6 host;
    rng.fill(host.data());
    Addr6 net_mask;
    net_mask.fill(0xFF);
    lpm6_mask(net_mask.data(), r.len, net_mask.data());
    for (int i = 0; i < 16; ++i) a[i] = static_cast<uint8_t>(r.prefix[i] | (host[i] & ~net_mask[i]));
  }
  return out;
}

std::vector<Addr6> uniform_addresses(size_t n, uint64_t seed) {
  Rng rng{seed};
  std::vector<Addr6> out(n);
  for (Addr6& a : out) rng.fill(a.data());
  return out;
}

}  // namespace tandem::ipv6
