#include "apps/dpi/dpi_app.h"

#include <atomic>
#include <vector>

#include "apps/dpi/dpi_control.h"
#include "apps/dpi/dpi_item_gpu.h"
#include "apps/forward_app_impl.h"
#include "gpu/table_updates.h"

namespace tandem::dpi {

PacketInfo packet_info_of(const DpiKey& k) {
  PacketInfo p;
  p.ip = true;
  p.proto = k.proto;
  p.sport = k.sport;
  p.dport = k.dport;
  p.payload = k.len ? k.payload : nullptr;
  p.len = k.len;
  return p;
}

uint32_t engine_result(const DpiTables& t, const DpiKey& k) {
  if (!k.inspect) return kResultUninspected;
  thread_local std::vector<uint32_t> rules;
  t.engine().match_rules(packet_info_of(k), &rules);
  return t.action_bits(rules);
}

namespace {

struct DpiTraits {
  using Key = DpiKey;
  using Item = DpiItem;
  using Result = uint32_t;
  static constexpr const char* kName = "dpi";

  static const char* drop_reason_name(DropReason r) { return dpi_drop_reason_name(r); }
  static constexpr bool lookup_drops(DropReason r) { return r == kDpiRuleDrop || r == kDpiNotInspected; }

  DpiTraits(const DpiTables& t, DpiPolicy p) : tables(&t), current(&t), policy(p) {}

  // The tables lookups read: `tables`, or with live updates those the control published last.
  // One load per lookup (per burst on the batched path), so a packet's stages see one version.
  const DpiTables& live() const { return *current.load(std::memory_order_acquire); }

  size_t ports() const { return kPorts; }
  DpiCore frame_core() const { return DpiCore{live().program(), policy}; }
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
    return dpi_classify(frame, len, key, l3_off, flow);
  }
  // The automaton a packet walks depends on its ports; its first rows are the start state's,
  // which every walk reads and the caches hold.
  void prefetch(const Key&) const {}
  Result lookup(const Key& k) const { return engine_result(live(), k); }
  // The burst's inspected packets through DpiEngine's batched match, the rest marked.
  void lookup_batch(const Key* keys, Result* results, size_t n) const {
    thread_local std::vector<PacketInfo> info;
    thread_local std::vector<uint32_t> at;
    thread_local std::vector<std::vector<uint32_t>> rules;
    const DpiTables& t = live();
    info.clear();
    at.clear();
    for (size_t i = 0; i < n; ++i) {
      if (!keys[i].inspect) {
        results[i] = kResultUninspected;
        continue;
      }
      info.push_back(packet_info_of(keys[i]));
      at.push_back(static_cast<uint32_t>(i));
    }
    if (rules.size() < info.size()) rules.resize(info.size());
    t.engine().match_batch_rules(info.data(), info.size(), rules.data());
    for (size_t k = 0; k < info.size(); ++k) results[at[k]] = t.action_bits(rules[k]);
  }
  void to_item(const Key& k, Item* item) const { make_dpi_item(k, item); }
  // What the GPU computes: the flat program on the item.
  void lookup_items(const Item* items, Result* results, size_t n) const {
    for (size_t i = 0; i < n; ++i) results[i] = lookup_item(items[i]);
  }
  Result lookup_item(const Item& it) const { return dpi_item_result(live().program(), it); }

  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t, Result r) const {
    if (r == kResultOnWorker) {
      // The payload did not fit an item: the worker matches it, found again in the frame.
      DpiKey k{};
      uint16_t l3_off = 0;
      if (const DropReason why = classify(frame, len, &k, &l3_off, nullptr); why != DropReason::kNone) {
        return Verdict::drop(why);  // not reached: the frame was classified before its lookup
      }
      r = engine_result(live(), k);
    }
    return dpi_verdict(r, policy);
  }

  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts) {
    gpu::persistent_refused_with_control(opts.mode, control != nullptr);
    if (!gpu) {
      // With a control, the tables published last, and no batch published while they are copied.
      const auto make = [this](const DpiTables& t, uint64_t version) {
        gpu = DpiGpuProgram::create(DpiCore{t.program(), policy});
        gpu_updates = std::make_shared<gpu::DeviceTableUpdates>(version);
        connect_device_copy();
      };
      if (control) control->with_tables(make);
      else make(live(), 0);
    }
    return gpu::runner_for_updates(gpu->make_runner(opts), gpu_updates, &persistent_runner);
  }
  void build_reference() {}
  // DpiEngine one packet at a time (its port groups, its recursive content checks).
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t) const {
    DpiKey k{};
    uint16_t l3_off = 0;
    const DropReason why = classify(frame, len, &k, &l3_off, nullptr);
    if (why != DropReason::kNone) return Verdict::drop(why);
    return dpi_verdict(engine_result(live(), k), policy);
  }

  // Live rule updates (dpi_control.h), made on the first call; they reach the offload runners'
  // device copy too. The whole-frame and resident paths run on a device copy of the tables as
  // they were (`tandem run --control` refuses them).
  TableControl* table_control() {
    if (!control) {
      gpu::persistent_refuses_control(persistent_runner);
      control = std::make_unique<RuleControl>(*tables, current);
      connect_device_copy();
    }
    return control.get();
  }
  // With a control and a device copy: each batch's program goes to the device too.
  void connect_device_copy() {
    if (!control || !gpu) return;
    const DpiGpuProgram* device = gpu.get();
    control->device_hook().connect(gpu_updates, gpu->device_root(), sizeof(DpiProgram),
                                   [device, p = policy](const DpiTables& t) { return device->upload(DpiCore{t.program(), p}); });
  }

  const DpiTables* tables;  // as loaded
  std::atomic<const DpiTables*> current;
  DpiPolicy policy;
  std::unique_ptr<DpiGpuProgram> gpu;
  std::shared_ptr<gpu::DeviceTableUpdates> gpu_updates;  // what the control stages for `gpu`
  bool persistent_runner = false;  // a persistent runner was made: it would not see updates
  std::unique_ptr<RuleControl> control;
};

}  // namespace

std::unique_ptr<ForwardApp> make_dpi_app(const DpiTables& tables, DpiPolicy policy) {
  return std::make_unique<ForwardAppImpl<DpiTraits>>(tables, policy);
}

}  // namespace tandem::dpi
