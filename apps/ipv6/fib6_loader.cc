#include "apps/ipv6/fib6_loader.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "apps/ipv4/fib_load_impl.h"
#include "core/byte_order.h"
#include "core/flow_hash.h"
#include "core/table_reader.h"
#include "io/mrt.h"

namespace tandem::ipv6 {

namespace {

// The big-endian halves of an address.
uint64_t high64(const uint8_t* a) { return load_be64(a); }
uint64_t low64(const uint8_t* a) { return load_be64(a + 8); }

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
  return ipv4::fib_detail::parse_prefix(b, e, parse_ipv6_addr, "IPv6", 128, addr, len, why);
}

std::string format_ipv6(const uint8_t addr[16]) {
  char text[INET6_ADDRSTRLEN];
  return inet_ntop(AF_INET6, addr, text, sizeof text) ? text : "?";
}

uint32_t derived_next_hop6(const uint8_t prefix[16], uint8_t len, uint32_t ports) {
  return static_cast<uint32_t>(mix64(mix64(high64(prefix) ^ len) ^ low64(prefix)) % (ports ? ports : 1));
}

namespace {

struct Ipv6Family {
  using Route = Route6;
  using Fib = Fib6;
  using Error = Fib6Error;
  struct Key {
    uint64_t hi, lo;
    uint8_t len;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(mix64(k.hi ^ mix64(k.lo ^ k.len))); }
  };
  static constexpr int kMrtFamily = 6;
  static constexpr int kColumns = 2;
  static constexpr size_t kReserve = size_t{1} << 18;

  static uint64_t& skipped(Fib& f) { return f.ipv4_skipped; }
  static Route from_mrt(const mrt::FirstRoute& f) {
    Route r{};
    std::memcpy(r.prefix.data(), f.prefix, 16);
    r.len = f.len;
    return r;
  }
  // A line without ':' is not IPv6: it must still be a well-formed IPv4 prefix to be skipped.
  static bool other_family(TableReader& in, const TableReader::Column& c) {
    if (c.contains(':')) return false;
    uint32_t v4 = 0;
    uint8_t v4_len = 0;
    std::string why;
    if (!ipv4::parse_ipv4_prefix(c.b, c.e, &v4, &v4_len, &why)) in.fail(why);
    return true;
  }
  static bool parse(const TableReader::Column& c, Route* r, std::string* why) {
    return parse_ipv6_prefix(c.b, c.e, &r->prefix, &r->len, why);
  }
  static bool clear_host_bits(Route* r) {
    Addr6 masked;
    lpm6_mask(r->prefix.data(), r->len, masked.data());
    const bool had = masked != r->prefix;
    r->prefix = masked;
    return had;
  }
  static uint32_t derive(const Route& r, uint32_t ports) { return derived_next_hop6(r.prefix.data(), r.len, ports); }
  static Key key(const Route& r) { return {high64(r.prefix.data()), low64(r.prefix.data()), r.len}; }
};

}  // namespace

Fib6 load_fib6(const std::string& path, const Fib6LoadOptions& opts) {
  return ipv4::fib_detail::load_fib<Ipv6Family>(path, opts.derive_ports);
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
