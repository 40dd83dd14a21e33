// fw-router: the IPv4 router with a 5-tuple firewall in front, as a ForwardApp
// (apps/forward_app.h). Per packet: parse and validate as the IPv4 router does (martians and
// expiring TTLs dropped first, ipv4_frame_core.h), then the firewall (HyperSplit, first match
// wins; no match: the rule set's default policy), a denied packet dropped as kAclDenied, an
// accepted one looked up in DIR-24-8 and forwarded (TTL, checksum, port) or dropped as kNoRoute.
//
// Packets a rule cannot judge fairly (RFC 1858, RFC 3128; docs/DESIGN.md, "Filtering malformed
// and fragmented packets") never reach the rules: a malformed transport header (kBadL4), a first
// fragment too short for its transport header (kTinyFragment), a TCP fragment at offset 8 bytes
// (kFragmentOverlap); fw_drop_before_rules. Packets without ports (later fragments, protocols
// other than TCP and UDP) match no rule that names ports, as in iptables: a later fragment of a
// denied flow falls through to the rules without ports and the default policy (`default drop`
// drops it; reassembly at the destination fails without the first fragment anyway). IPv6 is not
// handled (kNotHandled).
//
// The decision is fw_router_core.h's, the same code on every path:
//
//   scalar:  one header at a time through fw_router_decide;
//   batched: the burst's headers through HyperSplit's level-by-level group walk, then the accepted
//            ones' destinations through the IPv4 router's prefetching DIR-24-8 lookup;
//   GPU:     one thread per packet doing both (fw_router_gpu.h; the split two-kernel plan is for
//            the benchmark).
//
// The reference (--verify) is independent of both tables: linear first-match search over the
// rules and the IPv4 reference trie.
//
// The rules take live updates while the CPU paths and the GPU's offload path forward
// (fw_rule_control.h): each batch makes a new rule set, published by one atomic pointer that the
// CPU's lookups read (FwRouterTraits::live()) and, uploaded whole, by a device root that the GPU
// runners read (gpu::DeviceTableVersions).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/acl/acl_rules.h"
#include "apps/acl/hypersplit.h"
#include "apps/forward_app.h"
#include "apps/forward_app_impl.h"
#include "apps/fwrouter/fw_router_core.h"
#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/ipv4/ref_trie.h"

namespace tandem::gpu {
class DeviceTableUpdates;
}  // namespace tandem::gpu

namespace tandem::fwrouter {

class FwRouterGpu;
class RuleControl;

// What the app reads, built once: the rules (their order is their priority), their HyperSplit
// tree and one action byte per rule, the routes and their DIR-24-8 table. The tables must outlive
// the app.
struct FwRouterTables {
  FwRouterTables(const acl::RuleSet& rules, const acl::HyperSplit& tree, const ipv4::Dir24_8& table,
                 const ipv4::Fib& fib);

  const acl::RuleSet* rules;
  const acl::HyperSplit* tree;
  const ipv4::Dir24_8* table;
  const ipv4::Fib* fib;
  std::vector<uint8_t> actions;  // rules->rules[i].action
  uint8_t default_action;

  // fw_router_decide on the CPU, one header.
  uint32_t decide(const acl::Header& h) const {
    return fw_router_decide(tree->view(), actions.data(), default_action, table->tbl24(), table->tbl8(), h);
  }
  // The same for n headers: the firewall for a group of headers (HyperSplit's batched walk), then
  // DIR-24-8's prefetching lookup over the accepted ones.
  void decide_batch(const acl::Header* h, uint32_t* out, size_t n) const;
};

struct FwRouterTraits {
  using Key = acl::Header;
  using Item = acl::Header;
  static constexpr const char* kName = "fw-router";
  static const char* drop_reason_name(DropReason r) { return r == kAclDenied ? "acl_denied" : nullptr; }

  explicit FwRouterTraits(const FwRouterTables& tables);
  ~FwRouterTraits();
  FwRouterTraits(FwRouterTraits&&) noexcept;

  // The lookup's own drops: the firewall's and the router's.
  static constexpr bool lookup_drops(DropReason r) {
    return r == kAclDenied || r == DropReason::kNoRoute;
  }

  size_t ports() const { return size_t{t->fib->max_next_hop} + 1; }
  // The whole-frame and resident paths read device copies of the tables as loaded (live updates
  // reach the offload path only).
  FwRouterFrameCore frame_core() const {
    const acl::HyperSplit& hs = *t->tree;
    return {hs.view(), hs.nodes().size(), hs.leaf_rules().size(), hs.rules().size(),
            t->actions.data(), t->actions.size(), t->default_action,
            t->table->tbl24(), ipv4::Dir24_8::kTbl24Entries, t->table->tbl8(),
            uint64_t{t->table->tbl8_groups_high_water()} * ipv4::Dir24_8::kTbl8GroupEntries};
  }
  // classify and apply: the frame core's functions, called out of line (fw_router_app.cc) as the
  // burst loops were measured.
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const;
  // The tree's top levels stay in cache; the destination's tbl24 line is the miss worth starting
  // (every rule set, updated or not, reads the routes as loaded).
  void prefetch(const Key& k) const { prefetch_read(&t->table->tbl24()[ipv4::dir24_8_tbl24_index(k.dst)]); }
  uint32_t lookup(const Key& k) const { return live().decide(k); }
  void lookup_batch(const Key* keys, uint32_t* results, size_t n) const { live().decide_batch(keys, results, n); }
  void to_item(const Key& k, Item* item) const { *item = k; }
  void lookup_items(const Item* items, uint32_t* results, size_t n) const { live().decide_batch(items, results, n); }
  uint32_t lookup_item(const Item& k) const { return live().decide(k); }
  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t result) const;
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts);
  void build_reference();
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const;

  // The tables lookups read: `t`, or with live updates the rule set the control last published.
  const FwRouterTables& live() const { return *current.load(std::memory_order_acquire); }
  // Live rule updates (fw_rule_control.h), made on the first call; they reach the offload
  // runners' device copy too. --verify checks against the rules as loaded.
  TableControl* table_control();
  // With a control and a device copy: each batch's rules go to the device too.
  void connect_device_copy();

  const FwRouterTables* t;  // as loaded
  std::atomic<const FwRouterTables*> current;
  std::unique_ptr<ipv4::RefTrie> ref;
  std::unique_ptr<FwRouterGpu> gpu;  // made by the first make_gpu_runner
  std::shared_ptr<gpu::DeviceTableUpdates> gpu_updates;  // what the control stages for `gpu`
  bool persistent_runner = false;  // a persistent runner was made: it would not see updates
  std::unique_ptr<RuleControl> control;  // last: it goes first, with the device copies it made
};

using FwRouterApp = ForwardAppImpl<FwRouterTraits>;

}  // namespace tandem::fwrouter
