#include "apps/dpi/ids_rules.h"

#include <cctype>
#include <climits>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/table_reader.h"

namespace tandem::dpi {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") + 1 - b);
}

// Suricata's default port variables (suricata.yaml).
const std::map<std::string, std::string>& port_vars() {
  static const std::map<std::string, std::string> v = {
      {"HTTP_PORTS", "80"},          {"SHELLCODE_PORTS", "!80"}, {"ORACLE_PORTS", "1521"},
      {"SSH_PORTS", "22"},           {"DNP3_PORTS", "20000"},    {"MODBUS_PORTS", "502"},
      {"FILE_DATA_PORTS", "[80,110,143]"}, {"FTP_PORTS", "21"},  {"GENEVE_PORTS", "6081"},
      {"VXLAN_PORTS", "4789"},       {"TEREDO_PORTS", "3544"},   {"SMTP_PORTS", "[25,465,587]"},
      {"DNS_PORTS", "53"},           {"SIP_PORTS", "[5060,5061]"}};
  return v;
}

// Digits only, at most five of them.
bool parse_port_number(const std::string& s, uint16_t* p) {
  uint64_t v = 0;
  if (s.size() > 5 || !parse_decimal(s, 65535, &v)) return false;
  *p = static_cast<uint16_t>(v);
  return true;
}

// Splits "a,b,[c,d]" at top-level commas.
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

bool parse_ports(std::string t, PortSet* ps, std::string* why, uint64_t* unknown_vars, int depth = 0) {
  if (depth > 8) {
    *why = "port variables nest too deep";
    return false;
  }
  t = trim(t);
  *ps = PortSet{};
  if (t == "any") return true;
  if (!t.empty() && t[0] == '$') {
    const auto it = port_vars().find(t.substr(1));
    if (it == port_vars().end()) {
      ++*unknown_vars;
      return true;  // any
    }
    return parse_ports(it->second, ps, why, unknown_vars, depth + 1);
  }
  const bool bracketed = !t.empty() && t[0] == '[';
  if (bracketed && t.back() != ']') {
    *why = "unbalanced [ in ports `" + t + "`";
    return false;
  }
  const std::vector<std::string> items = split_list(bracketed ? t.substr(1, t.size() - 2) : t);
  if (items.size() > 1 || bracketed) {
    // A list: the union of its positive members (any when there are none) minus its negated ones.
    bool positive = false;
    ps->any = false;
    for (const std::string& e : items) {
      const bool neg = !e.empty() && e[0] == '!';
      PortSet sub;
      if (!parse_ports(neg ? e.substr(1) : e, &sub, why, unknown_vars, depth + 1)) return false;
      if (neg) {
        if (sub.any || !sub.exclude.empty()) {
          *why = "a negated member of a port list must be ports, not `" + e + "`";
          return false;
        }
        ps->exclude.insert(ps->exclude.end(), sub.include.begin(), sub.include.end());
        continue;
      }
      positive = true;
      ps->any = ps->any || sub.any;
      ps->include.insert(ps->include.end(), sub.include.begin(), sub.include.end());
      ps->exclude.insert(ps->exclude.end(), sub.exclude.begin(), sub.exclude.end());
    }
    if (!positive) ps->any = true;
    return true;
  }
  if (!t.empty() && t[0] == '!') {
    PortSet sub;
    if (!parse_ports(t.substr(1), &sub, why, unknown_vars, depth + 1)) return false;
    if (!sub.exclude.empty()) {
      *why = "a doubly negated port set is not supported: `" + t + "`";
      return false;
    }
    ps->any = !sub.any;  // !any: nothing
    ps->exclude = sub.include;
    return true;
  }
  const size_t colon = t.find(':');
  uint16_t lo = 0, hi = 65535;
  if (colon == std::string::npos) {
    if (!parse_port_number(t, &lo)) {
      *why = "bad port `" + t + "`";
      return false;
    }
    hi = lo;
  } else {
    const std::string a = t.substr(0, colon), b = t.substr(colon + 1);
    if ((!a.empty() && !parse_port_number(a, &lo)) || (!b.empty() && !parse_port_number(b, &hi)) || lo > hi) {
      *why = "bad port range `" + t + "`";
      return false;
    }
  }
  ps->any = false;
  ps->include.emplace_back(lo, hi);
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A content option's value: [!]"text with |hex| and escapes".
bool parse_content(const std::string& value, Content* c, std::string* why) {
  std::string v = trim(value);
  c->negated = !v.empty() && v[0] == '!';
  if (c->negated) v = trim(v.substr(1));
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') {
    *why = "content must be a quoted string: `" + value + "`";
    return false;
  }
  v = v.substr(1, v.size() - 2);
  std::string out;
  bool hex = false;
  int pending = -1;
  for (size_t i = 0; i < v.size(); ++i) {
    const char ch = v[i];
    if (hex) {
      if (ch == '|') {
        if (pending >= 0) {
          *why = "odd number of hex digits in content `" + value + "`";
          return false;
        }
        hex = false;
      } else if (ch == ' ') {
        continue;
      } else {
        const int d = hex_value(ch);
        if (d < 0) {
          *why = "bad hex digit '" + std::string(1, ch) + "' in content `" + value + "`";
          return false;
        }
        if (pending < 0) {
          pending = d;
        } else {
          out += static_cast<char>(pending * 16 + d);
          pending = -1;
        }
      }
    } else if (ch == '|') {
      hex = true;
    } else if (ch == '\\') {
      if (i + 1 >= v.size()) {
        *why = "content ends in a lone backslash: `" + value + "`";
        return false;
      }
      out += v[++i];
    } else {
      out += ch;
    }
  }
  if (hex) {
    *why = "unterminated |hex| in content `" + value + "`";
    return false;
  }
  if (out.empty()) {
    *why = "empty content";
    return false;
  }
  c->bytes = std::move(out);
  return true;
}

// A rule line over this many bytes (after joining continued lines) is refused.
constexpr size_t kMaxRuleLine = 65534;

enum class IntParse { kOk, kNotNumber, kOutOfRange };

// A decimal integer (optionally negative) within +-`limit`. A token that is not a number (a
// byte_extract variable, say) is kNotNumber; digits beyond the limit are kOutOfRange, never
// taken for a variable, so that an absurd `offset:` fails the rule instead of being ignored.
IntParse parse_int(const std::string& s, int64_t limit, int32_t* v) {
  const std::string t = trim(s);
  if (t.empty()) return IntParse::kNotNumber;
  size_t i = t[0] == '-' ? 1 : 0;
  if (i == t.size()) return IntParse::kNotNumber;
  int64_t x = 0;
  bool over = false;
  for (; i < t.size(); ++i) {
    if (t[i] < '0' || t[i] > '9') return IntParse::kNotNumber;
    if (!over) x = x * 10 + (t[i] - '0');
    over = over || x > limit;
  }
  if (over) return IntParse::kOutOfRange;
  *v = static_cast<int32_t>(t[0] == '-' ? -x : x);
  return IntParse::kOk;
}

// Payload positions fit 16 bits: larger offsets, depths and distances can never be met.
constexpr int64_t kMaxPosition = 65535;

}  // namespace

unsigned protocol_classes(const std::string& p) {
  static const std::map<std::string, unsigned> kClasses = {
      {"tcp", kClassTcp}, {"tcp-pkt", kClassTcp}, {"tcp-stream", kClassTcp}, {"http", kClassTcp},
      {"http1", kClassTcp}, {"http2", kClassTcp}, {"tls", kClassTcp}, {"ssh", kClassTcp}, {"ftp", kClassTcp},
      {"ftp-data", kClassTcp}, {"smtp", kClassTcp}, {"smb", kClassTcp}, {"imap", kClassTcp}, {"pop3", kClassTcp},
      {"dcerpc", kClassTcp}, {"rdp", kClassTcp}, {"modbus", kClassTcp}, {"dnp3", kClassTcp}, {"mqtt", kClassTcp},
      {"rfb", kClassTcp}, {"udp", kClassUdp}, {"dhcp", kClassUdp}, {"tftp", kClassUdp}, {"snmp", kClassUdp},
      {"sip", kClassUdp}, {"ntp", kClassUdp}, {"ikev2", kClassUdp}, {"ike", kClassUdp}, {"krb5", kClassUdp},
      {"dns", kClassTcp | kClassUdp}, {"nfs", kClassTcp | kClassUdp}, {"enip", kClassTcp | kClassUdp},
      {"icmp", kClassOtherIp}, {"icmpv6", kClassOtherIp},
      {"ip", kClassTcp | kClassUdp | kClassOtherIp}, {"pkthdr", kClassTcp | kClassUdp | kClassOtherIp}};
  const auto it = kClasses.find(p);
  return it == kClasses.end() ? 0 : it->second;
}

bool PortSet::contains(uint16_t p) const {
  bool in = any;
  for (const auto& [lo, hi] : include) in = in || (p >= lo && p <= hi);
  for (const auto& [lo, hi] : exclude) in = in && !(p >= lo && p <= hi);
  return in;
}

bool parse_ids_rule(const std::string& text, IdsRule* rule, std::string* why, std::map<std::string, uint64_t>* ignored,
                    uint64_t* unknown_vars) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    *why = "no option list in parentheses";
    return false;
  }
  std::istringstream hs(text.substr(0, open));
  std::vector<std::string> h;
  for (std::string t; hs >> t;) h.push_back(t);
  if (h.size() != 7) {
    *why = "the header needs 7 fields (action proto src sport -> dst dport), found " + std::to_string(h.size());
    return false;
  }
  IdsRule r;
  r.action = h[0];
  r.proto = h[1];
  if (protocol_classes(r.proto) == 0) {
    *why = "unknown protocol `" + r.proto + "` in the rule header";
    return false;
  }
  if (h[4] != "->" && h[4] != "<>") {
    *why = "direction must be -> or <>, not `" + h[4] + "`";
    return false;
  }
  r.bidirectional = h[4] == "<>";
  if (!parse_ports(h[3], &r.src_ports, why, unknown_vars) || !parse_ports(h[6], &r.dst_ports, why, unknown_vars)) return false;
  // Options: name[:value] separated by ';' outside quotes; '\' escapes the next character.
  const std::string body = text.substr(open + 1, close - open - 1);
  std::vector<std::string> opts;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char ch = body[i];
    if (ch == '\\' && i + 1 < body.size()) {
      cur += ch;
      cur += body[++i];
      continue;
    }
    if (ch == '"') quoted = !quoted;
    if (ch == ';' && !quoted) {
      opts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (quoted) {
    *why = "unterminated quote in the options";
    return false;
  }
  if (!trim(cur).empty()) opts.push_back(trim(cur));
  std::set<std::string> ignored_here;
  bool have_sid = false;
  // Whether the last content-like option was a `content`: modifiers after `uricontent` (which is
  // not applied) belong to it and are skipped with it.
  bool last_is_content = false, any_content_like = false;
  for (const std::string& o : opts) {
    if (o.empty()) continue;
    const size_t colon = o.find(':');
    const std::string name = trim(o.substr(0, colon));
    const std::string value = colon == std::string::npos ? "" : o.substr(colon + 1);
    if (name == "content") {
      Content c;
      if (!parse_content(value, &c, why)) return false;
      r.contents.push_back(std::move(c));
      last_is_content = any_content_like = true;
    } else if (name == "nocase" || name == "offset" || name == "depth" || name == "distance" || name == "within") {
      if (!last_is_content) {
        if (!any_content_like) {
          *why = "`" + name + "` before any content";
          return false;
        }
        continue;  // a modifier of a uricontent, which is not applied
      }
      Content& c = r.contents.back();
      if (name == "nocase") {
        c.nocase = true;
        continue;
      }
      int32_t v = 0;
      const IntParse got = parse_int(value, kMaxPosition, &v);
      if (got == IntParse::kOutOfRange) {
        *why = "`" + name + ":" + trim(value) + "` is out of range (-" + std::to_string(kMaxPosition) + ".." +
               std::to_string(kMaxPosition) + ")";
        return false;
      }
      if (got == IntParse::kNotNumber) {  // a byte_extract variable, say: not applied
        ignored_here.insert(name + " (variable)");
        continue;
      }
      if ((name == "offset" || name == "depth" || name == "within") && v < 0) {
        *why = "`" + name + "` must not be negative";
        return false;
      }
      if (name == "offset") c.offset = v;
      if (name == "depth") c.depth = v;
      if (name == "distance") c.distance = v;
      if (name == "within") c.within = v;
    } else if (name == "sid") {
      int32_t v = 0;
      if (parse_int(value, INT32_MAX, &v) != IntParse::kOk || v <= 0) {
        *why = "bad sid `" + trim(value) + "` (an integer 1.." + std::to_string(INT32_MAX) + ")";
        return false;
      }
      r.sid = static_cast<uint32_t>(v);
      have_sid = true;
    } else if (name == "uricontent") {
      last_is_content = false;
      any_content_like = true;
      ignored_here.insert(name);
    } else if (name != "msg" && name != "rev" && name != "reference" && name != "classtype" && name != "metadata" &&
               name != "gid" && name != "priority") {
      ignored_here.insert(name);
    }
  }
  if (!have_sid) {
    *why = "no sid";
    return false;
  }
  for (const std::string& n : ignored_here) ++(*ignored)[n];
  *rule = std::move(r);
  return true;
}

void number_patterns(IdsRuleSet* s) {
  std::map<std::pair<std::string, bool>, uint32_t> ids;
  s->patterns.clear();
  s->without_content = 0;
  for (IdsRule& r : s->rules) {
    for (Content& c : r.contents) {
      if (c.negated) continue;
      auto [it, fresh] = ids.emplace(std::make_pair(c.bytes, c.nocase), static_cast<uint32_t>(s->patterns.size() + 1));
      if (fresh) s->patterns.push_back({c.bytes, c.nocase});
      c.pattern = it->second;
    }
    if (r.contents.empty()) ++s->without_content;
  }
}

IdsRuleSet load_ids_rules(const std::vector<std::string>& paths, const IdsLoadOptions& opts) {
  IdsRuleSet s;
  static const char* kActions[] = {"alert", "drop", "pass", "reject", "rejectsrc", "rejectdst", "rejectboth", "log"};
  std::unordered_map<uint32_t, size_t> sid_at;  // sid -> its first rule
  constexpr uint64_t kDuplicateExamples = 5;
  for (const std::string& path : paths) {
    LineReader in(path, {kMaxRuleLine});
    std::string logical;
    uint64_t first = 0;
    bool more = true;
    while (more) {
      std::string_view line;
      try {
        more = in.next(&line);
      } catch (const LineError& e) {
        logical.clear();
        if (!opts.skip_bad) throw;
        s.errors.push_back(e.what());
        continue;
      }
      if (more) {
        if (logical.empty()) first = in.line_number();
        if (!line.empty() && line.back() == '\\') {  // continues on the next line
          logical.append(line.substr(0, line.size() - 1));
          if (logical.size() > kMaxRuleLine) {
            const std::string msg = path + ":" + std::to_string(first) + ": rule over " + std::to_string(kMaxRuleLine) +
                                    " bytes (continued lines)";
            logical.clear();
            if (!opts.skip_bad) throw TableError(msg);
            s.errors.push_back(msg);
          }
          continue;
        }
        logical.append(line);
      } else if (logical.empty()) {
        break;
      }
      const std::string t = trim(logical);
      logical.clear();
      if (t.empty()) continue;
      if (t[0] == '#') {
        const std::string rest = trim(t.substr(1));
        for (const char* a : kActions) {
          if (rest.rfind(std::string(a) + " ", 0) == 0 && rest.find('(') != std::string::npos) {
            ++s.disabled;
            break;
          }
        }
        continue;
      }
      IdsRule r;
      std::string why;
      if (!parse_ids_rule(t, &r, &why, &s.ignored_options, &s.unknown_port_variables)) {
        const std::string msg = path + ":" + std::to_string(first) + ": " + why;
        if (!opts.skip_bad) throw TableError(msg);
        s.errors.push_back(msg);
        continue;
      }
      r.file = path;
      r.line = first;
      if (auto [it, fresh] = sid_at.emplace(r.sid, s.rules.size()); !fresh) {
        const IdsRule& was = s.rules[it->second];
        if (++s.duplicate_sids <= kDuplicateExamples) {
          s.duplicate_sid_examples.push_back(path + ":" + std::to_string(first) + ": sid " + std::to_string(r.sid) +
                                             " already at " + was.file + ":" + std::to_string(was.line));
        }
      }
      s.rules.push_back(std::move(r));
    }
  }
  number_patterns(&s);
  return s;
}

}  // namespace tandem::dpi
