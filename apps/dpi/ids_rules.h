// Snort/Suricata rules for DPI (the control plane): the header (action, protocol, addresses,
// ports) and the `content` options with their modifiers; other options are counted, not applied.
//
//   alert tcp $EXTERNAL_NET any -> $HOME_NET $HTTP_PORTS (msg:"..."; content:"abc|0D 0A|"; nocase;
//       content:!"x"; distance:0; within:10; offset:4; depth:20; sid:2000001; rev:1;)
//
// Content strings: `|..|` holds hex bytes separated by spaces; `\"`, `\;`, `\\` and `\:` escape.
// A leading `!` negates a content (the rule needs it absent). Modifiers apply to the content before
// them: nocase, offset, depth (from the payload's start), distance, within (from the end of the
// previous content's match). A line starting with '#' is a comment or a disabled rule; a line
// ending in '\' continues on the next. Port variables take Suricata's default values
// ($HTTP_PORTS = 80, ...); an unknown variable is `any` (counted).
//
// Pattern ids (the `--patterns-only` numbering): the unique (bytes, nocase) pairs of the
// non-negated contents of enabled rules, numbered from 1 in order of first appearance across the
// files in the order given.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tandem::dpi {

struct Content {
  std::string bytes;
  bool nocase = false;
  bool negated = false;
  int32_t offset = -1;    // -1: not given
  int32_t depth = -1;
  int32_t distance = INT32_MIN;  // INT32_MIN: not given (relative modifiers may be negative)
  int32_t within = -1;
  uint32_t pattern = 0;   // pattern id (1-based) for non-negated contents, else 0
};

// Ports as Snort reads them: (any, or in one of `include`) and in none of `exclude`. `[80,!81]`
// and `80,!81` are lists (their negated members are exclusions); `!X` excludes X.
struct PortSet {
  bool any = true;
  std::vector<std::pair<uint16_t, uint16_t>> include;  // closed ranges
  std::vector<std::pair<uint16_t, uint16_t>> exclude;
  bool contains(uint16_t p) const;
};

struct IdsRule {
  uint32_t sid = 0;
  std::string action;  // alert, drop, pass, ...
  std::string proto;   // tcp, udp, ip, icmp, http, dns, ...
  PortSet src_ports, dst_ports;
  bool bidirectional = false;
  std::vector<Content> contents;
  std::string file;
  uint64_t line = 0;
};

struct Pattern {
  std::string bytes;
  bool nocase = false;
};

struct IdsRuleSet {
  std::vector<IdsRule> rules;          // enabled rules, in file order
  std::vector<Pattern> patterns;       // id k is patterns[k - 1]
  uint64_t disabled = 0;               // commented-out rules seen
  uint64_t without_content = 0;        // enabled rules with no content (never match in stage 2)
  std::map<std::string, uint64_t> ignored_options;  // pcre, flow, byte_test, ...: rules using each
  uint64_t unknown_port_variables = 0;
  std::vector<std::string> errors;     // with skip_bad: "FILE:LINE: what"
  // A sid defined again: "FILE:LINE: sid N already at FILE:LINE" for the first few, and how
  // many in all. Both rules are kept (both can match), but a report by sid is then ambiguous.
  std::vector<std::string> duplicate_sid_examples;
  uint64_t duplicate_sids = 0;
};

struct IdsLoadOptions {
  bool skip_bad = false;
};

// Which packets a rule's protocol keyword covers, as bits: TCP, UDP, other IP. 0 for a keyword
// Tandem does not know, which the loader refuses (a rule silently widened to every packet, or
// narrowed to none, is worse than an error).
inline constexpr unsigned kClassTcp = 1, kClassUdp = 2, kClassOtherIp = 4;
unsigned protocol_classes(const std::string& keyword);

// Loads the files in order into one set (pattern ids continue across files). Throws
// std::runtime_error naming the file and line for a malformed rule, unless skip_bad; the reader's
// errors (NUL bytes, over-long lines, truncated or endless input) are core/table_reader.h's.
IdsRuleSet load_ids_rules(const std::vector<std::string>& paths, const IdsLoadOptions& opts = {});

// Numbers the patterns of s->rules (Content::pattern, s->patterns) as the loader does, and counts
// the rules without content: for a set whose rules changed.
void number_patterns(IdsRuleSet* s);

// Parses one rule's text; false with *why when malformed.
bool parse_ids_rule(const std::string& text, IdsRule* rule, std::string* why, std::map<std::string, uint64_t>* ignored,
                    uint64_t* unknown_vars);

}  // namespace tandem::dpi
