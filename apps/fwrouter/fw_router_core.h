// The fw-router's per-packet decision, written once as `__host__ __device__` code for the CPU
// paths (scalar, batched) and the GPU kernels (fused and split): the 5-tuple firewall first
// (HyperSplit, acl_core.h; the first matching rule's action, else the rule set's default policy),
// then, for an accepted packet, the IPv4 router's DIR-24-8 lookup (dir24_8_core.h).
//
// A decision is one 32-bit result, as every app's GPU item gets: the next hop (<= kMaxNextHop),
// ipv4::kNoRoute, or kDenied. The split GPU plan stops after the firewall and stores the rule
// index instead; fw_router_route() finishes from there, so both plans run the same code.
#pragma once

#include <cstdint>

#include "apps/acl/acl_core.h"
#include "apps/ipv4/dir24_8_core.h"
#include "apps/ipv4/ipv4_frame_core.h"
#include "core/batch.h"
#include "core/byte_order.h"

namespace tandem::fwrouter {

// The firewall dropped the packet. Next hops fit in 24 bits and kNoRoute is all ones, so this
// value is neither.
inline constexpr uint32_t kDenied = 0xFFFFFFFEu;
// The fw-router's own drop reason: the firewall's first matching rule (or its default policy) drops it.
inline constexpr DropReason kAclDenied = app_drop_reason(0);
static_assert(kDenied != ipv4::kNoRoute && kDenied > ipv4::kMaxNextHop);

// Rule actions as acl_rules.h's Action (kAccept = 0, kDrop = 1), as bytes for device code.
inline constexpr uint8_t kActionAccept = 0;

// Whether the firewall lets a header through, given its first matching rule (acl::kNoMatch for
// none). `actions` holds one byte per rule, so that the split plan's second kernel reads a small
// array that stays in cache rather than the rules (44 bytes each).
TANDEM_HD_INLINE bool fw_accepts(uint32_t rule, const uint8_t* actions, uint8_t default_action) {
  return (rule == acl::kNoMatch ? default_action : actions[rule]) == kActionAccept;
}

// The second half of a decision: the firewall's rule index in, the result out.
TANDEM_HD_INLINE uint32_t fw_router_route(uint32_t rule, const uint8_t* actions, uint8_t default_action,
                                          const uint32_t* tbl24, const uint32_t* tbl8, uint32_t dst) {
  if (!fw_accepts(rule, actions, default_action)) return kDenied;
  return ipv4::dir24_8_lookup(tbl24, tbl8, dst);
}

// One header's whole decision: firewall, then route.
TANDEM_HD_INLINE uint32_t fw_router_decide(const acl::HsView& tree, const uint8_t* actions, uint8_t default_action,
                                           const uint32_t* tbl24, const uint32_t* tbl8, const acl::Header& h) {
  return fw_router_route(acl::classify_hypersplit(tree, h), actions, default_action, tbl24, tbl8, h.dst);
}

// What the firewall drops before its rules, because a rule could not judge the packet fairly
// (RFC 1858, RFC 3128; docs/DESIGN.md, "Filtering malformed and fragmented packets"), or kNone.
// `ip` is the IPv4 header of a packet ipv4_classify_frame accepted, `pp` its parse:
//  - a malformed transport header (a TCP data offset below 5, a UDP length below 8, ...), whose
//    ports would read as 0: kBadL4;
//  - a first fragment too short to hold its transport header (TCP 20 bytes or its data offset,
//    UDP 8, ICMP 4), whose ports or TCP flags are in the next fragment: kTinyFragment;
//  - a TCP fragment at offset 1 (8 bytes), which reassembly may lay over the first fragment's
//    ports and flags after the firewall let that one pass: kFragmentOverlap.
// Later fragments are not dropped: they have no ports (fw_header_of), so only rules that do not
// name ports can match them.
TANDEM_HD_INLINE DropReason fw_drop_before_rules(const uint8_t* ip, const ParsedPacket& pp) {
  if (pp.flags & kFlagL4Malformed) {
    const uint8_t tiny = kFlagFragment | kFlagL4Truncated;
    return (pp.flags & tiny) == tiny ? DropReason::kTinyFragment : DropReason::kBadL4;
  }
  const uint32_t frag_off = ((uint32_t{ip[6]} << 8) | ip[7]) & 0x1FFF;
  if (pp.tuple.proto == kProtoTcp && frag_off == 1) return DropReason::kFragmentOverlap;
  return DropReason::kNone;
}

// The 5-tuple of a packet ipv4_classify_frame accepted: addresses in host order, the transport
// ports and the protocol. A packet without ports (neither TCP nor UDP, a fragment after the first,
// a malformed transport header) gets ports 0 and acl::kNoPorts, so that no rule naming ports
// matches it.
TANDEM_HD_INLINE acl::Header fw_header_of(const ParsedPacket& pp) {
  acl::Header h;
  h.src = load_be32(pp.tuple.src);
  h.dst = load_be32(pp.tuple.dst);
  h.sport = pp.tuple.src_port;
  h.dport = pp.tuple.dst_port;
  h.proto = pp.tuple.proto;
  const bool ports = (pp.tuple.proto == kProtoTcp || pp.tuple.proto == kProtoUdp) &&
                     !(pp.flags & (kFlagL4Missing | kFlagL4Malformed));
  h.flags = ports ? 0 : acl::kNoPorts;
  return h;
}

// A frame through the IPv4 router's checks (ipv4_classify_frame), then fw_drop_before_rules;
// kNone with the firewall's header in *h and the parse in *pp when the rules are to decide.
TANDEM_HD_INLINE DropReason fw_classify_frame(const uint8_t* frame, uint32_t len, ParsedPacket* pp, acl::Header* h) {
  uint32_t dst = 0;
  DropReason r = ipv4::ipv4_classify_frame(frame, len, pp, &dst);
  if (r == DropReason::kNone) r = fw_drop_before_rules(frame + pp->l3_off, *pp);
  if (r == DropReason::kNone) *h = fw_header_of(*pp);
  return r;
}

// Applies a decision to the classified IPv4 header at `ip`: a denied packet is dropped untouched
// (kAclDenied), the rest as the IPv4 router does (no route: kNoRoute; else TTL, checksum, port).
// Returns the Verdict encoding.
TANDEM_HD_INLINE uint32_t fw_router_apply(uint8_t* ip, uint32_t result) {
  if (result == kDenied) return Verdict::drop(kAclDenied);
  return ipv4::ipv4_apply_route(ip, result);
}

// classify() of the frame core: the firewall's header of a frame that reaches the rules.
TANDEM_HD_INLINE DropReason fw_classify(const uint8_t* frame, uint32_t len, acl::Header* h, uint16_t* l3_off,
                                        uint32_t* flow) {
  ParsedPacket pp;
  const DropReason r = fw_classify_frame(frame, len, &pp, h);
  if (r == DropReason::kNone) {
    *l3_off = pp.l3_off;
    if (flow) *flow = flow_hash(pp.tuple);
  }
  return r;
}

// The frame core (apps/frame_core.h): the HyperSplit tree, one action byte per rule and the
// DIR-24-8 arrays.
struct FwRouterFrameCore {
  using Key = acl::Header;
  using Result = uint32_t;

  acl::HsView tree;
  uint64_t node_count, leaf_rule_count, rule_count;
  const uint8_t* actions;
  uint64_t action_count;
  uint8_t default_action;
  const uint32_t* tbl24;
  uint64_t tbl24_entries;
  const uint32_t* tbl8;
  uint64_t tbl8_entries;

  TANDEM_HD_INLINE DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
    return fw_classify(frame, len, key, l3_off, flow);
  }
  TANDEM_HD_INLINE Result lookup(const Key& h) const {
    return fw_router_decide(tree, actions, default_action, tbl24, tbl8, h);
  }
  TANDEM_HD_INLINE uint32_t apply(uint8_t* frame, uint32_t, uint16_t l3_off, Result result) const {
    return fw_router_apply(frame + l3_off, result);
  }
  template <class F>
  void for_each_array(F&& f) {
    f(tree.nodes, node_count);
    f(tree.leaf_rules, leaf_rule_count);
    f(tree.rules, rule_count);
    f(actions, action_count);
    f(tbl24, tbl24_entries);
    f(tbl8, tbl8_entries);
  }
};

}  // namespace tandem::fwrouter
