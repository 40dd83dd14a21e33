// Firewall rule sets (the control plane): ClassBench filter files, Tandem's readable rule syntax,
// and random rule sets with the GPU-router report's protocol mix.
//
// ClassBench (detected by a first rule line starting with '@'), one rule per line:
//     @SRC/LEN <tab> DST/LEN <tab> SPORT_LO : SPORT_HI <tab> DPORT_LO : DPORT_HI <tab> 0xPP/0xMM [...]
// (columns after the protocol, such as TCP flags, are ignored; every rule's action is accept).
//
// Tandem's syntax, one rule per line, fields in any order, each optional (absent = any):
//     accept|drop [src PREFIX] [dst PREFIX] [sport N|N-M] [dport N|N-M] [proto tcp|udp|icmp|N|N/MASK]
//     default accept|drop          (the policy when no rule matches; accept if not given)
// PREFIX is a.b.c.d/len or a.b.c.d (a /32) or `any`. '#' starts a comment, blank lines are skipped,
// .gz files are read too. Priority is the order in the file: the first match wins.
//
// Errors name the file and the line. With skip_bad the bad lines are reported (kept in `errors`)
// and left out, and the rest loads; without it the first bad line fails the load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/acl/acl_core.h"
#include "core/table_reader.h"

namespace tandem::acl {

enum Action : uint8_t { kAccept = 0, kDrop = 1 };

struct RuleSet {
  std::vector<Rule> rules;     // priority order
  std::vector<uint64_t> line;  // each rule's line in the file (for messages)
  // Each rule's 1-based number among the file's rule lines, bad ones skipped by skip_bad
  // included, so that a skipped line never renumbers the rules after it.
  std::vector<uint32_t> number;
  Action default_action = kAccept;
  std::string path;
  bool classbench = false;
  uint64_t lines = 0;
  std::vector<std::string> errors;  // with skip_bad: "FILE:LINE: what: `line`" per skipped line
};

struct LoadOptions {
  bool skip_bad = false;
};

// Throws TableError (core/table_reader.h) naming the file and line.
RuleSet load_rules(const std::string& path, const LoadOptions& opts = {});

// Parses one rule in Tandem's syntax; false with *why set when it is malformed.
bool parse_rule(const std::string& text, Rule* rule, std::string* why);
// One rule in Tandem's syntax (parse_rule reads it back).
std::string format_rule(const Rule& r);

// `n` random rules with the GPU-router report's protocol mix (its Table 1: TCP 75%, UDP 14%, ICMP
// 4%, any 6%, other 1%), random prefixes (lengths 8-32 for sources and destinations, any 10%),
// ports as any (50%), one port (30%) or a range (20%), actions accept 80% / drop 20%. The same for
// a seed everywhere.
RuleSet random_rules(size_t n, uint64_t seed);

// A header matched by rule r (a random point in its ranges), for traces that exercise the rules.
Header header_in_rule(const Rule& r, uint64_t random);

// ClassBench trace lines: "src dst sport dport proto ..." as decimal integers (extra columns
// ignored); throws TableError naming the line.
std::vector<Header> load_trace(const std::string& path);

// The same lines read a chunk at a time, so that a trace of any length classifies in bounded
// memory. read() fills up to `max` headers and returns how many (0 at the end); throws TableError.
class TraceReader {
 public:
  explicit TraceReader(const std::string& path);
  size_t read(Header* out, size_t max);

 private:
  TableReader in_;
};

}  // namespace tandem::acl
