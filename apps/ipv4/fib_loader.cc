#include "apps/ipv4/fib_loader.h"

#include <functional>

#include "apps/ipv4/fib_load_impl.h"
#include "core/byte_order.h"
#include "core/flow_hash.h"
#include "core/table_reader.h"
#include "io/mrt.h"

namespace tandem::ipv4 {

bool parse_ipv4_addr(const char* b, const char* e, uint32_t* addr) {
  uint32_t a = 0;
  for (int octet = 0; octet < 4; ++octet) {
    const char* dot = b;
    while (dot < e && *dot != '.') ++dot;
    if ((octet < 3) != (dot < e)) return false;  // exactly three dots
    uint64_t v = 0;
    if (dot - b > 3 || !parse_decimal(std::string_view(b, static_cast<size_t>(dot - b)), 255, &v)) return false;
    a = (a << 8) | static_cast<uint32_t>(v);
    b = dot + 1;
  }
  *addr = a;
  return true;
}

bool parse_ipv4_prefix(const char* b, const char* e, uint32_t* addr, uint8_t* len, std::string* why) {
  return fib_detail::parse_prefix(b, e, parse_ipv4_addr, "IPv4", 32, addr, len, why);
}

std::string format_ipv4(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xFF) + "." +
         std::to_string((a >> 8) & 0xFF) + "." + std::to_string(a & 0xFF);
}

uint32_t derived_next_hop(uint32_t prefix, uint8_t len, uint32_t ports) {
  return static_cast<uint32_t>(mix64(uint64_t{prefix} * 64 + len) % (ports ? ports : 1));
}

namespace {

struct Ipv4Family {
  using Route = ipv4::Route;
  using Fib = ipv4::Fib;
  using Error = FibError;
  using Key = uint64_t;  // prefix << 6 | len
  using KeyHash = std::hash<uint64_t>;
  static constexpr int kMrtFamily = 4;
  static constexpr int kColumns = 3;
  static constexpr size_t kReserve = size_t{1} << 20;

  static uint64_t& skipped(Fib& f) { return f.ipv6_skipped; }
  static Route from_mrt(const mrt::FirstRoute& f) {
    Route r{};
    r.prefix = load_be32(f.prefix);
    r.len = f.len;
    return r;
  }
  // IPv6 lines are skipped unread, so that one file can hold both families.
  static bool other_family(TableReader&, const TableReader::Column& c) { return c.contains(':'); }
  static bool parse(const TableReader::Column& c, Route* r, std::string* why) {
    return parse_ipv4_prefix(c.b, c.e, &r->prefix, &r->len, why);
  }
  static bool clear_host_bits(Route* r) {
    const uint32_t masked = r->prefix & (r->len ? ~0u << (32 - r->len) : 0u);
    const bool had = masked != r->prefix;
    r->prefix = masked;
    return had;
  }
  static uint32_t derive(const Route& r, uint32_t ports) { return derived_next_hop(r.prefix, r.len, ports); }
  static Key key(const Route& r) { return (uint64_t{r.prefix} << 6) | r.len; }
};

}  // namespace

Fib load_fib(const std::string& path, const FibLoadOptions& opts) {
  return fib_detail::load_fib<Ipv4Family>(path, opts.derive_ports);
}

}  // namespace tandem::ipv4
