#include "apps/acl/acl_rules.h"

#include <cstdio>
#include <sstream>

#include "apps/ipv4/fib_loader.h"
#include "core/flow_hash.h"
#include "core/table_reader.h"

namespace tandem::acl {

namespace {

constexpr int kMaxColumns = 16;

Rule any_rule() {
  Rule r{};
  for (int f = 0; f < kFields; ++f) r.lo[f] = 0;
  r.hi[kSrc] = r.hi[kDst] = 0xFFFFFFFFu;
  r.hi[kSport] = r.hi[kDport] = 0xFFFF;
  r.hi[kProto] = 0xFF;
  r.proto_value = r.proto_mask = 0;
  r.action = kAccept;
  return r;
}

void set_prefix(Rule& r, int f, uint32_t addr, uint8_t len) {
  const uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);
  r.lo[f] = addr & mask;
  r.hi[f] = (addr & mask) | ~mask;
}

void set_proto(Rule& r, uint8_t value, uint8_t mask) {
  r.proto_value = value & mask;
  r.proto_mask = mask;
  if (mask == 0xFF) {
    r.lo[kProto] = r.hi[kProto] = value;
  } else {  // any, or a mask that is not a range: the tree treats it as any, the match checks it
    r.lo[kProto] = 0;
    r.hi[kProto] = 0xFF;
  }
}

bool parse_prefix_token(const std::string& t, uint32_t* addr, uint8_t* len, std::string* why) {
  if (t == "any") {
    *addr = 0;
    *len = 0;
    return true;
  }
  if (t.find('/') == std::string::npos) {
    *len = 32;
    if (!ipv4::parse_ipv4_addr(t.data(), t.data() + t.size(), addr)) {
      *why = "bad address `" + t + "` (expected a.b.c.d, a.b.c.d/len or any)";
      return false;
    }
    return true;
  }
  std::string w;
  if (!ipv4::parse_ipv4_prefix(t.data(), t.data() + t.size(), addr, len, &w)) {
    *why = "bad prefix `" + t + "`: " + w;
    return false;
  }
  return true;
}

bool parse_port_range(const std::string& t, uint32_t* lo, uint32_t* hi, std::string* why) {
  if (t == "any") {
    *lo = 0;
    *hi = 0xFFFF;
    return true;
  }
  const size_t dash = t.find('-');
  uint64_t a = 0, b = 0;
  const bool ok = dash == std::string::npos
                      ? parse_decimal(t, 0xFFFF, &a) && (b = a, true)
                      : parse_decimal(std::string_view(t).substr(0, dash), 0xFFFF, &a) &&
                            parse_decimal(std::string_view(t).substr(dash + 1), 0xFFFF, &b);
  if (!ok || a > b) {
    *why = "bad port range `" + t + "` (expected N or N-M with 0 <= N <= M <= 65535, or any)";
    return false;
  }
  *lo = static_cast<uint32_t>(a);
  *hi = static_cast<uint32_t>(b);
  return true;
}

bool parse_hex_byte(std::string_view s, uint8_t* out) {
  if (s.size() < 3 || s.size() > 4 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  unsigned v = 0;
  for (char c : s.substr(2)) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    v = v * 16 + static_cast<unsigned>(d);
  }
  *out = static_cast<uint8_t>(v);
  return true;
}

bool parse_proto(const std::string& t, uint8_t* value, uint8_t* mask, std::string* why) {
  *mask = 0xFF;
  if (t == "any") {
    *value = *mask = 0;
    return true;
  }
  if (t == "tcp") return *value = 6, true;
  if (t == "udp") return *value = 17, true;
  if (t == "icmp") return *value = 1, true;
  const size_t slash = t.find('/');
  uint64_t v = 0, m = 0xFF;
  const bool ok = slash == std::string::npos
                      ? parse_decimal(t, 255, &v)
                      : parse_decimal(std::string_view(t).substr(0, slash), 255, &v) &&
                            parse_decimal(std::string_view(t).substr(slash + 1), 255, &m);
  if (!ok) {
    *why = "bad protocol `" + t + "` (expected tcp, udp, icmp, any, N or N/MASK with 0..255)";
    return false;
  }
  *value = static_cast<uint8_t>(v);
  *mask = static_cast<uint8_t>(m);
  return true;
}

// A ClassBench line split into columns: @SRC/LEN DST/LEN LO : HI LO : HI 0xPP/0xMM [...]
bool parse_classbench(const TableReader::Column* col, int n, Rule* r, std::string* why) {
  if (n < 9 || col[0].view().empty() || col[0].view()[0] != '@' || col[3].view() != ":" || col[6].view() != ":") {
    *why = "not a ClassBench filter (expected @SRC/LEN DST/LEN LO : HI LO : HI 0xPP/0xMM)";
    return false;
  }
  *r = any_rule();
  uint32_t a = 0;
  uint8_t len = 0;
  const std::string src(col[0].view().substr(1)), dst(col[1].view());
  if (!parse_prefix_token(src, &a, &len, why)) return false;
  set_prefix(*r, kSrc, a, len);
  if (!parse_prefix_token(dst, &a, &len, why)) return false;
  set_prefix(*r, kDst, a, len);
  uint64_t p[4];
  const int idx[4] = {2, 4, 5, 7};
  for (int k = 0; k < 4; ++k) {
    if (!parse_decimal(col[idx[k]].view(), 0xFFFF, &p[k])) {
      *why = "bad port `" + std::string(col[idx[k]].view()) + "`";
      return false;
    }
  }
  if (p[0] > p[1] || p[2] > p[3]) {
    *why = "port range with its low end above its high end";
    return false;
  }
  r->lo[kSport] = static_cast<uint32_t>(p[0]);
  r->hi[kSport] = static_cast<uint32_t>(p[1]);
  r->lo[kDport] = static_cast<uint32_t>(p[2]);
  r->hi[kDport] = static_cast<uint32_t>(p[3]);
  const std::string_view proto = col[8].view();
  const size_t slash = proto.find('/');
  uint8_t v = 0, m = 0;
  if (slash == std::string_view::npos || !parse_hex_byte(proto.substr(0, slash), &v) ||
      !parse_hex_byte(proto.substr(slash + 1), &m)) {
    *why = "bad protocol `" + std::string(proto) + "` (expected 0xPP/0xMM)";
    return false;
  }
  set_proto(*r, v, m);
  return true;
}

}  // namespace

bool parse_rule(const std::string& text, Rule* rule, std::string* why) {
  std::istringstream in(text);
  std::string word;
  in >> word;
  Rule r = any_rule();
  if (word == "accept") {
    r.action = kAccept;
  } else if (word == "drop") {
    r.action = kDrop;
  } else {
    *why = "a rule starts with accept or drop, not `" + word + "`";
    return false;
  }
  bool seen[5] = {false, false, false, false, false};
  static const char* kNames[5] = {"src", "dst", "sport", "dport", "proto"};
  while (in >> word) {
    int f = -1;
    for (int k = 0; k < 5; ++k) {
      if (word == kNames[k]) f = k;
    }
    if (f < 0) {
      *why = "unknown field `" + word + "` (src, dst, sport, dport, proto)";
      return false;
    }
    if (seen[f]) {
      *why = "field `" + word + "` given twice";
      return false;
    }
    seen[f] = true;
    std::string value;
    if (!(in >> value)) {
      *why = "field `" + word + "` without a value";
      return false;
    }
    if (f == kSrc || f == kDst) {
      uint32_t a = 0;
      uint8_t len = 0;
      if (!parse_prefix_token(value, &a, &len, why)) return false;
      set_prefix(r, f, a, len);
    } else if (f == kSport || f == kDport) {
      if (!parse_port_range(value, &r.lo[f], &r.hi[f], why)) return false;
    } else {
      uint8_t v = 0, m = 0;
      if (!parse_proto(value, &v, &m, why)) return false;
      set_proto(r, v, m);
    }
  }
  *rule = r;
  return true;
}

std::string format_rule(const Rule& r) {
  auto prefix = [](uint32_t lo, uint32_t hi) {
    if (lo == 0 && hi == 0xFFFFFFFFu) return std::string("any");
    int len = 32;
    while (len > 0 && ((hi - lo) >> (32 - len)) != 0) --len;
    return ipv4::format_ipv4(lo) + "/" + std::to_string(len);
  };
  auto ports = [](uint32_t lo, uint32_t hi) {
    if (lo == 0 && hi == 0xFFFF) return std::string("any");
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
  };
  std::string s = r.action == kDrop ? "drop" : "accept";
  s += " src " + prefix(r.lo[kSrc], r.hi[kSrc]) + " dst " + prefix(r.lo[kDst], r.hi[kDst]);
  s += " sport " + ports(r.lo[kSport], r.hi[kSport]) + " dport " + ports(r.lo[kDport], r.hi[kDport]);
  s += " proto " + (r.proto_mask == 0 ? std::string("any")
                                      : std::to_string(r.proto_value) + (r.proto_mask == 0xFF ? "" : "/" + std::to_string(r.proto_mask)));
  return s;
}

RuleSet load_rules(const std::string& path, const LoadOptions& opts) {
  RuleSet s;
  s.path = path;
  TableReader in(path);
  TableReader::Column col[kMaxColumns];
  bool decided = false;
  uint32_t rule_lines = 0;
  for (int n; (n = in.next(col, kMaxColumns, "too many columns for a rule")) > 0;) {
    if (!decided) {
      s.classbench = col[0].view()[0] == '@';
      decided = true;
    }
    std::string why;
    Rule r{};
    bool ok;
    if (s.classbench) {
      ok = parse_classbench(col, n, &r, &why);
    } else if (col[0].view() == "default") {
      if (n == 2 && (col[1].view() == "accept" || col[1].view() == "drop")) {
        s.default_action = col[1].view() == "drop" ? kDrop : kAccept;
        continue;
      }
      ok = false;
      why = "expected `default accept` or `default drop`";
    } else {
      // The rule's text: the line without its comment.
      std::string text(col[0].b, static_cast<size_t>(col[n - 1].e - col[0].b));
      ok = parse_rule(text, &r, &why);
    }
    if (!ok) {
      const std::string msg = in.path() + ":" + std::to_string(in.line_number()) + ": " + why + ": `" + quote_excerpt(in.line()) + "`";
      if (!opts.skip_bad) throw TableError(msg);
      s.errors.push_back(msg);
      ++rule_lines;  // a skipped rule keeps its number: the rules after it are not renumbered
      continue;
    }
    s.rules.push_back(r);
    s.line.push_back(in.line_number());
    s.number.push_back(++rule_lines);
  }
  s.lines = in.line_number();
  return s;
}

RuleSet random_rules(size_t n, uint64_t seed) {
  RuleSet s;
  s.path = "random " + std::to_string(n) + " rules, seed " + std::to_string(seed);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
  auto next = [&x] { return mix64(x += 0x9E3779B97F4A7C15ull); };
  auto prefix = [&](Rule& r, int f) {
    if (next() % 10 == 0) return;  // any
    set_prefix(r, f, static_cast<uint32_t>(next()), static_cast<uint8_t>(8 + next() % 25));
  };
  auto port = [&](Rule& r, int f) {
    const uint64_t k = next() % 10;
    if (k < 5) return;  // any
    const uint32_t a = static_cast<uint32_t>(next() % 65536);
    r.lo[f] = a;
    r.hi[f] = k < 8 ? a : std::min<uint32_t>(0xFFFF, a + static_cast<uint32_t>(next() % 4096));
  };
  for (size_t i = 0; i < n; ++i) {
    Rule r = any_rule();
    prefix(r, kSrc);
    prefix(r, kDst);
    const uint64_t p = next() % 100;  // TCP 75, UDP 14, ICMP 4, any 6, other 1
    if (p < 75) {
      set_proto(r, 6, 0xFF);
    } else if (p < 89) {
      set_proto(r, 17, 0xFF);
    } else if (p < 93) {
      set_proto(r, 1, 0xFF);
    } else if (p < 99) {
      set_proto(r, 0, 0);
    } else {
      set_proto(r, static_cast<uint8_t>(47 + next() % 4), 0xFF);  // GRE, ESP, AH, ...
    }
    if (r.proto_value == 6 || r.proto_value == 17) {
      port(r, kSport);
      port(r, kDport);
    }
    r.action = next() % 5 == 0 ? kDrop : kAccept;
    s.rules.push_back(r);
    s.line.push_back(i + 1);
    s.number.push_back(static_cast<uint32_t>(i + 1));
  }
  s.lines = n;
  return s;
}

Header header_in_rule(const Rule& r, uint64_t random) {
  Header h;
  uint64_t x = random;
  auto pick = [&x](uint32_t lo, uint32_t hi) {
    x = mix64(x + 0x9E3779B97F4A7C15ull);
    const uint64_t span = uint64_t{hi} - lo + 1;
    return static_cast<uint32_t>(lo + x % span);
  };
  h.src = pick(r.lo[kSrc], r.hi[kSrc]);
  h.dst = pick(r.lo[kDst], r.hi[kDst]);
  h.sport = static_cast<uint16_t>(pick(r.lo[kSport], r.hi[kSport]));
  h.dport = static_cast<uint16_t>(pick(r.lo[kDport], r.hi[kDport]));
  h.proto = static_cast<uint8_t>((pick(0, 255) & ~r.proto_mask) | r.proto_value);
  return h;
}

TraceReader::TraceReader(const std::string& path) : in_(path) {}

size_t TraceReader::read(Header* out, size_t max) {
  TableReader::Column col[kMaxColumns];
  size_t got = 0;
  for (int n; got < max && (n = in_.next(col, kMaxColumns, "too many columns for a trace line")) > 0;) {
    if (n < 5) in_.fail("a trace line has 5 columns or more: src dst sport dport proto");
    uint64_t v[5];
    const uint64_t lim[5] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFF, 0xFFFF, 0xFF};
    for (int k = 0; k < 5; ++k) {
      if (!parse_decimal(col[k].view(), lim[k], &v[k])) {
        in_.fail("column " + std::to_string(k + 1) + " is not an integer 0.." + std::to_string(lim[k]));
      }
    }
    Header& h = out[got++];
    h = Header{};
    h.src = static_cast<uint32_t>(v[0]);
    h.dst = static_cast<uint32_t>(v[1]);
    h.sport = static_cast<uint16_t>(v[2]);
    h.dport = static_cast<uint16_t>(v[3]);
    h.proto = static_cast<uint8_t>(v[4]);
  }
  return got;
}

std::vector<Header> load_trace(const std::string& path) {
  TraceReader in(path);
  std::vector<Header> out;
  constexpr size_t kChunk = 1 << 14;
  for (size_t n = kChunk; n == kChunk;) {
    const size_t have = out.size();
    out.resize(have + kChunk);
    n = in.read(out.data() + have, kChunk);
    out.resize(have + n);
  }
  return out;
}

}  // namespace tandem::acl
