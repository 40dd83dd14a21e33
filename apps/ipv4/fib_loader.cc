#include "apps/ipv4/fib_loader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "apps/ipv4/dir24_8_core.h"
#include "core/flow_hash.h"
#include "core/batch.h"
#include "core/table_reader.h"
#include "io/mrt.h"

namespace tandem::ipv4 {

namespace {

// Decimal octets and prefix lengths: digits only, at most 10 of them.
bool parse_uint(const char* b, const char* e, uint64_t max, uint64_t* out) {
  if (b == e || e - b > 10) return false;
  uint64_t v = 0;
  for (const char* p = b; p < e; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + static_cast<uint64_t>(*p - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

}  // namespace

bool parse_ipv4_addr(const char* b, const char* e, uint32_t* addr) {
  uint32_t a = 0;
  for (int octet = 0; octet < 4; ++octet) {
    const char* dot = b;
    while (dot < e && *dot != '.') ++dot;
    if ((octet < 3) != (dot < e)) return false;  // exactly three dots
    uint64_t v = 0;
    if (dot - b > 3 || !parse_uint(b, dot, 255, &v)) return false;
    a = (a << 8) | static_cast<uint32_t>(v);
    b = dot + 1;
  }
  *addr = a;
  return true;
}

bool parse_ipv4_prefix(const char* b, const char* e, uint32_t* addr, uint8_t* len,
                       std::string* why) {
  const char* slash = static_cast<const char*>(std::memchr(b, '/', static_cast<size_t>(e - b)));
  if (!slash) {
    *why = "missing /length";
    return false;
  }
  if (!parse_ipv4_addr(b, slash, addr)) {
    *why = "bad IPv4 address";
    return false;
  }
  uint64_t l = 0;
  if (!parse_uint(slash + 1, e, 1000, &l)) {
    *why = "bad prefix length";
    return false;
  }
  if (l > 32) {
    *why = "prefix length " + std::to_string(l) + " is over 32";
    return false;
  }
  *len = static_cast<uint8_t>(l);
  return true;
}

std::string format_ipv4(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xFF) + "." +
         std::to_string((a >> 8) & 0xFF) + "." + std::to_string(a & 0xFF);
}

uint32_t derived_next_hop(uint32_t prefix, uint8_t len, uint32_t ports) {
  return static_cast<uint32_t>(mix64(uint64_t{prefix} * 64 + len) % (ports ? ports : 1));
}

namespace {

Fib load_fib_mrt(const std::string& path, const FibLoadOptions& opts) {
  Fib fib;
  fib.path = path;
  const mrt::FirstRouteStats st = mrt::read_first_routes(path, 4, [&](const mrt::FirstRoute& f) {
    Route x{};
    x.prefix = uint32_t{f.prefix[0]} << 24 | uint32_t{f.prefix[1]} << 16 | uint32_t{f.prefix[2]} << 8 | f.prefix[3];
    x.len = f.len;
    fib.host_bits_cleared += f.host_bits_cleared;
    if (f.has_next_hop) {
      if (f.port > Verdict::kMaxPort) throw FibError(path + ": more than 2^24 - 1 distinct next hops");
      x.next_hop = f.port;
    } else {
      x.next_hop = derived_next_hop(x.prefix, x.len, opts.derive_ports);
      ++fib.derived_next_hops;
    }
    fib.routes.push_back(x);
  });
  fib.mrt_records = fib.lines = st.records;
  fib.other_paths = st.other_paths;
  fib.ipv6_skipped = st.other_family;
  fib.next_hop_addresses = st.next_hop_addresses;
  for (const Route& r : fib.routes) fib.max_next_hop = std::max(fib.max_next_hop, r.next_hop);
  return fib;
}

}  // namespace

Fib load_fib(const std::string& path, const FibLoadOptions& opts) {
  if (mrt::looks_like_mrt(path)) {
    try {
      return load_fib_mrt(path, opts);
    } catch (const mrt::MrtError& e) {
      throw FibError(e.what());
    }
  }
  Fib fib;
  fib.path = path;
  // key: prefix << 6 | len -> index in routes, so duplicates replace in place.
  std::unordered_map<uint64_t, size_t> seen;
  try {
    TableReader in(path);
    constexpr const char* kTooMany = "too many columns (expected PREFIX/LEN [NEXTHOP])";
    TableReader::Column col[3];
    // Three columns are read so that an IPv6 line with extra columns is still skipped, not failed.
    for (int ncol; (ncol = in.next(col, 3, kTooMany)) > 0;) {
      if (col[0].contains(':')) {
        ++fib.ipv6_skipped;
        continue;
      }
      if (ncol > 2) in.fail(kTooMany);
      Route r{};
      std::string why;
      if (!parse_ipv4_prefix(col[0].b, col[0].e, &r.prefix, &r.len, &why)) in.fail(why);
      const uint32_t masked = r.prefix & (r.len ? ~0u << (32 - r.len) : 0u);
      if (masked != r.prefix) ++fib.host_bits_cleared;
      r.prefix = masked;
      if (ncol == 2) {
        uint64_t nh = 0;
        if (!parse_decimal(col[1].view(), Verdict::kMaxPort, &nh)) in.fail("next hop must be an integer 0..16777214 (16777215 marks a flood)");
        r.next_hop = static_cast<uint32_t>(nh);
      } else {
        r.next_hop = derived_next_hop(r.prefix, r.len, opts.derive_ports);
        ++fib.derived_next_hops;
      }
      const uint64_t key = (uint64_t{r.prefix} << 6) | r.len;
      // Room for a full table once the file looks like one; a small file does not pay for it.
      if (fib.routes.size() == 4096) seen.reserve(1 << 20);
      auto [it, inserted] = seen.emplace(key, fib.routes.size());
      if (inserted) {
        fib.routes.push_back(r);
      } else {
        fib.duplicates.add(in, fib.routes[it->second].next_hop != r.next_hop);
        fib.routes[it->second] = r;
      }
    }
    fib.lines = in.line_number();
  } catch (const TableError& e) {
    throw FibError(e.what());
  }
  for (const Route& r : fib.routes) fib.max_next_hop = std::max(fib.max_next_hop, r.next_hop);
  return fib;
}

}  // namespace tandem::ipv4
