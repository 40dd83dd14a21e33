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

namespace tandem::fwrouter {

// The firewall dropped the packet. Next hops fit in 24 bits and kNoRoute is all ones, so this
// value is neither.
inline constexpr uint32_t kDenied = 0xFFFFFFFEu;
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

// The 5-tuple of a packet ipv4_classify_frame accepted: addresses in host order, the transport
// ports (0 for protocols without ports, non-first fragments and malformed transport headers, as
// the parser leaves them) and the protocol.
TANDEM_HD_INLINE acl::Header fw_header_of(const ParsedPacket& pp) {
  acl::Header h;
  h.src = ipv4::frame_detail::load_be32(pp.tuple.src);
  h.dst = ipv4::frame_detail::load_be32(pp.tuple.dst);
  h.sport = pp.tuple.src_port;
  h.dport = pp.tuple.dst_port;
  h.proto = pp.tuple.proto;
  return h;
}

// Applies a decision to the classified IPv4 header at `ip`: a denied packet is dropped untouched
// (kAclDenied), the rest as the IPv4 router does (no route: kNoRoute; else TTL, checksum, port).
// Returns the Verdict encoding.
TANDEM_HD_INLINE uint32_t fw_router_apply(uint8_t* ip, uint32_t result) {
  if (result == kDenied) return Verdict::drop(DropReason::kAclDenied);
  return ipv4::ipv4_apply_route(ip, result);
}

}  // namespace tandem::fwrouter
