#include "apps/ipv6/ipv6_gpu.h"

#include <algorithm>

#include "apps/ipv6/lpm6_core.h"
#include "gpu/cuda_util.cuh"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::ipv6 {

namespace {

// A 16-byte address as one runner item: loaded with one 16-byte access.
struct alignas(16) Addr16 {
  uint8_t b[16];
};
static_assert(sizeof(Addr16) == 16);

struct Ipv6LookupOp {
  using In = Addr16;
  using Out = uint32_t;
  const uint32_t* tbl24;
  const uint32_t* tbl8;
  __device__ uint32_t operator()(const Addr16& a) const { return lpm6_lookup(tbl24, tbl8, a.b); }
};

class Ipv6GpuTableImpl final : public Ipv6GpuTable {
 public:
  Ipv6GpuTableImpl(const Lpm6& table, uint32_t spare_groups) : spare_(spare_groups) {
    gpu::require_available();
    tbl24_.resize(Lpm6::kTbl24Entries);
    sync(table);
  }

  bool sync(const Lpm6& table) override {
    if (table.version() == version_) return true;
    const size_t groups = std::max<size_t>(table.groups_high_water(), 1);
    bool kept = true;
    if (tbl8_.size() < groups * Lpm6::kGroupEntries) {
      kept = tbl8_.size() == 0;
      const size_t room = std::max(groups * 2, groups + spare_);
      tbl8_.resize(room * Lpm6::kGroupEntries);
      drop_host_runner();  // it points at the old array
    }
    tbl24_.copy_from(table.tbl24(), Lpm6::kTbl24Entries);
    tbl8_.copy_from(table.tbl8(), groups * Lpm6::kGroupEntries);
    version_ = table.version();
    return kept;
  }

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<Ipv6LookupOp>>(Ipv6LookupOp{tbl24_.get(), tbl8_.get()}, opts);
  }

  size_t device_bytes() const override { return (tbl24_.size() + tbl8_.size()) * sizeof(uint32_t); }

 private:
  gpu::DeviceBuffer<uint32_t> tbl24_;
  gpu::DeviceBuffer<uint32_t> tbl8_;
  uint32_t spare_ = 0;
  uint64_t version_ = ~uint64_t{0};
};

const Ipv6GpuTable::Factory::Registrar registered{&Ipv6GpuTable::Factory::make<Ipv6GpuTableImpl>};

}  // namespace
}  // namespace tandem::ipv6

TANDEM_REGISTER_GPU_PART("ipv6")
