// fw-router on the GPU: device copies of the tree (nodes, leaf rule lists, rules), the action
// bytes and the DIR-24-8 table (tbl24 and the used part of tbl8), which live as long as the
// object, and offload runners whose per-item operation is the whole decision, fw_router_decide
// (fw_router_core.h, the code the CPU runs, so the results equal the CPU's): acl::Header in, the
// result out. The runners read the tables' device pointers from a root in device memory, so that
// live rule updates (fw_rule_control.h) can replace the rules between batches: each rule set
// updates make is uploaded whole (upload_rules, over the routes as loaded) and its root replaces
// the one there (gpu::DeviceTableVersions). The benchmarks' fused and split plans work on the same device copies
// (bench/variants/fw_router_plans.h). The implementation is fw_router_gpu.cu's
// (gpu/gpu_factory.h): without CUDA, create() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/fwrouter/fw_router_app.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"
#include "gpu/table_updates.h"

namespace tandem::fwrouter {

class FwRouterGpu : public gpu::GpuTable {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<FwRouterGpu>(const FwRouterTables&)>;
  // Copies the tables to device 0. Throws gpu::GpuError.
  static std::unique_ptr<FwRouterGpu> create(const FwRouterTables& tables) { return Factory::create(tables); }

  // Device pointers to every table a decision reads, passed by value to the kernels.
  struct DeviceTables {
    acl::HsView tree;
    const uint8_t* actions;
    uint8_t default_action;
    const uint32_t* tbl24;
    const uint32_t* tbl8;
  };
  virtual DeviceTables device_tables() const = 0;
  // Where the runners read their DeviceTables (device memory).
  virtual DeviceTables* device_root() const = 0;
  // A device copy of `tables`' rules (tree and action bytes) with the routes of this copy: its
  // root (a DeviceTables), and what owns its device memory. Throws gpu::GpuError.
  virtual gpu::UploadedVersion upload_rules(const FwRouterTables& tables) const = 0;

  virtual size_t device_bytes() const = 0;
};

}  // namespace tandem::fwrouter
