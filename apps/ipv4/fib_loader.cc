#include "apps/ipv4/fib_loader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "core/flow_hash.h"

namespace tandem::ipv4 {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

[[noreturn]] void fail(const std::string& path, uint64_t line, const std::string& what,
                       const std::string& text) {
  throw FibError(path + ":" + std::to_string(line) + ": " + what + ": `" + text + "`");
}

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

Fib load_fib(const std::string& path, const FibLoadOptions& opts) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw FibError(path + ": cannot open: " + std::strerror(errno));
  gzbuffer(f, 1 << 17);
  Fib fib;
  fib.path = path;
  // key: prefix << 6 | len -> index in routes, so duplicates replace in place.
  std::unordered_map<uint64_t, size_t> seen;
  seen.reserve(1 << 20);
  std::string buf(4096, '\0');
  uint64_t lineno = 0;
  try {
    while (gzgets(f, buf.data(), static_cast<int>(buf.size()))) {
      ++lineno;
      size_t n = std::strlen(buf.c_str());
      std::string text(buf.c_str(), n);
      if (n == buf.size() - 1 && buf[n - 1] != '\n' && !gzeof(f)) fail(path, lineno, "line too long", text.substr(0, 80));
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      const char* p = text.c_str();
      const char* end = p + text.size();
      if (const char* hash = static_cast<const char*>(std::memchr(p, '#', text.size()))) end = hash;
      // Split into at most three tokens.
      const char* tok[3][2];
      int ntok = 0;
      while (p < end) {
        while (p < end && is_space(*p)) ++p;
        if (p >= end) break;
        const char* s = p;
        while (p < end && !is_space(*p)) ++p;
        if (ntok == 3) fail(path, lineno, "too many columns (expected PREFIX/LEN [NEXTHOP])", text);
        tok[ntok][0] = s;
        tok[ntok][1] = p;
        ++ntok;
      }
      if (ntok == 0) continue;
      if (std::memchr(tok[0][0], ':', static_cast<size_t>(tok[0][1] - tok[0][0]))) {
        ++fib.ipv6_skipped;
        continue;
      }
      if (ntok > 2) fail(path, lineno, "too many columns (expected PREFIX/LEN [NEXTHOP])", text);
      Route r{};
      std::string why;
      if (!parse_ipv4_prefix(tok[0][0], tok[0][1], &r.prefix, &r.len, &why)) fail(path, lineno, why, text);
      const uint32_t masked = r.prefix & (r.len ? ~0u << (32 - r.len) : 0u);
      if (masked != r.prefix) ++fib.host_bits_cleared;
      r.prefix = masked;
      if (ntok == 2) {
        uint64_t nh = 0;
        if (!parse_uint(tok[1][0], tok[1][1], 0xFFFFFF, &nh)) {
          fail(path, lineno, "next hop must be an integer 0..16777215", text);
        }
        r.next_hop = static_cast<uint32_t>(nh);
      } else {
        r.next_hop = derived_next_hop(r.prefix, r.len, opts.derive_ports);
        ++fib.derived_next_hops;
      }
      const uint64_t key = (uint64_t{r.prefix} << 6) | r.len;
      auto [it, inserted] = seen.emplace(key, fib.routes.size());
      if (inserted) {
        fib.routes.push_back(r);
      } else {
        ++fib.duplicates;
        fib.routes[it->second] = r;
      }
    }
    int errnum = 0;
    const char* msg = gzerror(f, &errnum);
    if (errnum != Z_OK && errnum != Z_STREAM_END) {
      throw FibError(path + ":" + std::to_string(lineno + 1) + ": read error: " + msg);
    }
  } catch (...) {
    gzclose(f);
    throw;
  }
  gzclose(f);
  fib.lines = lineno;
  for (const Route& r : fib.routes) fib.max_next_hop = std::max(fib.max_next_hop, r.next_hop);
  return fib;
}

}  // namespace tandem::ipv4
