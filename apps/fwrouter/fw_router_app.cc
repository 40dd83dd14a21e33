#include "apps/fwrouter/fw_router_app.h"

#include <algorithm>

#include "apps/fwrouter/fw_router_gpu.h"
#include "apps/fwrouter/fw_rule_control.h"
#include "apps/ipv4/ipv4_cpu.h"
#include "apps/ipv4/ipv4_frame_core.h"
#include "core/parse.h"
#include "gpu/table_updates.h"

namespace tandem::fwrouter {

static_assert(acl::kAccept == kActionAccept, "fw_router_core.h reads acl::Action as bytes");

FwRouterTables::FwRouterTables(const acl::RuleSet& r, const acl::HyperSplit& hs, const ipv4::Dir24_8& tbl,
                               const ipv4::Fib& f)
    : rules(&r), tree(&hs), table(&tbl), fib(&f), default_action(r.default_action) {
  actions.reserve(r.rules.size() + 1);
  for (const acl::Rule& rule : r.rules) actions.push_back(rule.action);
  actions.push_back(r.default_action);  // never indexed; keeps data() valid for an empty rule set
}

void FwRouterTables::decide_batch(const acl::Header* h, uint32_t* out, size_t n) const {
  // Chunks of 64: the accepted destinations' tbl24 lines are all requested right after the
  // firewall, and the lookups that follow find them on their way (with chunks no longer than the
  // lookup's prefetch distance, lookup_batched adds no prefetches of its own). Chunks of 32 to 256
  // measured within 3% of each other on the build VM (acl1_10k, the BGP table).
  constexpr size_t kChunk = ipv4::kPrefetchDistance;
  uint32_t rule[kChunk], dst[kChunk], next_hop[kChunk];
  uint16_t pos[kChunk];
  const uint32_t* tbl24 = table->tbl24();
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t g = std::min(kChunk, n - base);
    tree->classify_batch(h + base, rule, g);
    size_t m = 0;
    for (size_t j = 0; j < g; ++j) {
      if (fw_accepts(rule[j], actions.data(), default_action)) {
        dst[m] = h[base + j].dst;
        prefetch_read(&tbl24[ipv4::dir24_8_tbl24_index(dst[m])]);
        pos[m++] = static_cast<uint16_t>(j);
      } else {
        out[base + j] = kDenied;
      }
    }
    ipv4::lookup_batched(*table, dst, next_hop, m);
    for (size_t k = 0; k < m; ++k) out[base + pos[k]] = next_hop[k];
  }
}

FwRouterTraits::FwRouterTraits(const FwRouterTables& tables) : t(&tables), current(&tables) {}
FwRouterTraits::~FwRouterTraits() = default;
// Before any control exists (it holds a reference to `current`).
FwRouterTraits::FwRouterTraits(FwRouterTraits&& o) noexcept
    : t(o.t), current(o.current.load()), ref(std::move(o.ref)), gpu(std::move(o.gpu)),
      gpu_updates(std::move(o.gpu_updates)), persistent_runner(o.persistent_runner) {}

TableControl* FwRouterTraits::table_control() {
  if (!control) {
    gpu::persistent_refuses_control(persistent_runner);
    control = std::make_unique<RuleControl>(*t, current);
    connect_device_copy();
  }
  return control.get();
}

void FwRouterTraits::connect_device_copy() {
  if (!control || !gpu) return;
  const FwRouterGpu* device = gpu.get();
  control->device_hook().connect(gpu_updates, gpu->device_root(), sizeof(FwRouterGpu::DeviceTables),
                                 [device](const FwRouterTables& tables) { return device->upload_rules(tables); });
}

DropReason FwRouterTraits::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                    uint32_t* flow) const {
  return fw_classify(frame, len, key, l3_off, flow);
}

uint32_t FwRouterTraits::apply(uint8_t* frame, uint32_t, uint16_t l3_off, uint32_t result) const {
  return fw_router_apply(frame + l3_off, result);
}

std::unique_ptr<gpu::OffloadRunner> FwRouterTraits::make_gpu_runner(const gpu::OffloadOptions& opts) {
  gpu::persistent_refused_with_control(opts.mode, control != nullptr);
  if (!gpu) {
    // With a control, the rules published last, and no batch published while they are copied.
    const auto make = [this](const FwRouterTables& tables, uint64_t version) {
      gpu = FwRouterGpu::create(tables);
      gpu_updates = std::make_shared<gpu::DeviceTableUpdates>(version);
      connect_device_copy();
    };
    if (control) control->with_tables(make);
    else make(live(), 0);
  }
  return gpu::runner_for_updates(gpu->make_runner(opts), gpu_updates, &persistent_runner);
}

void FwRouterTraits::build_reference() {
  ref = std::make_unique<ipv4::RefTrie>();
  for (const ipv4::Route& r : t->fib->routes) ref->insert(r.prefix, r.len, r.next_hop);
}

uint32_t FwRouterTraits::reference_verdict(const uint8_t* frame, uint32_t len, uint16_t) const {
  // apply() rewrote the TTL and the checksum (consistently), never the 5-tuple: parse again.
  ParsedPacket pp;
  if (parse_packet(frame, len, &pp) != DropReason::kNone) return Verdict::kUnset;  // cannot happen
  const acl::Header h = fw_header_of(pp);
  const std::vector<acl::Rule>& rules = t->rules->rules;
  uint32_t first = acl::kNoMatch;
  for (uint32_t i = 0; i < rules.size(); ++i) {
    if (acl::rule_matches(rules[i], h)) {
      first = i;
      break;
    }
  }
  const uint8_t action = first == acl::kNoMatch ? uint8_t{t->rules->default_action} : rules[first].action;
  if (action != acl::kAccept) return Verdict::drop(kAclDenied);
  const uint32_t nh = ref->lookup(h.dst);
  return nh == kNoRoute ? Verdict::drop(DropReason::kNoRoute) : Verdict::port(nh);
}

}  // namespace tandem::fwrouter
