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

}  // namespace

struct Ipv6GpuTable::Impl {
  gpu::DeviceBuffer<uint32_t> tbl24;
  gpu::DeviceBuffer<uint32_t> tbl8;
  uint32_t spare = 0;
  uint64_t version = ~uint64_t{0};
  std::unique_ptr<gpu::OffloadRunner> host_runner;  // lookup()'s, made on first use
};

Ipv6GpuTable::Ipv6GpuTable(const Lpm6& table, uint32_t spare_groups) : impl_(std::make_unique<Impl>()) {
  gpu::require_available();
  impl_->spare = spare_groups;
  impl_->tbl24.resize(Lpm6::kTbl24Entries);
  sync(table);
}

Ipv6GpuTable::~Ipv6GpuTable() = default;

bool Ipv6GpuTable::sync(const Lpm6& table) {
  Impl& m = *impl_;
  if (table.version() == m.version) return true;
  const size_t groups = std::max<size_t>(table.groups_high_water(), 1);
  bool kept = true;
  if (m.tbl8.size() < groups * Lpm6::kGroupEntries) {
    kept = m.tbl8.size() == 0;
    const size_t room = std::max(groups * 2, groups + m.spare);
    m.tbl8.resize(room * Lpm6::kGroupEntries);
    m.host_runner.reset();  // it points at the old array
  }
  m.tbl24.copy_from(table.tbl24(), Lpm6::kTbl24Entries);
  m.tbl8.copy_from(table.tbl8(), groups * Lpm6::kGroupEntries);
  m.version = table.version();
  return kept;
}

std::unique_ptr<gpu::OffloadRunner> Ipv6GpuTable::make_runner(const gpu::OffloadOptions& opts) const {
  return std::make_unique<gpu::OffloadRunnerImpl<Ipv6LookupOp>>(Ipv6LookupOp{impl_->tbl24.get(), impl_->tbl8.get()},
                                                                opts);
}

void Ipv6GpuTable::lookup(const uint8_t (*addrs)[16], uint32_t* next_hops, size_t n) {
  gpu::run_all_lazily(impl_->host_runner, *this, size_t{1} << 20, addrs, next_hops, n);
}

size_t Ipv6GpuTable::device_bytes() const { return (impl_->tbl24.size() + impl_->tbl8.size()) * sizeof(uint32_t); }

}  // namespace tandem::ipv6

TANDEM_REGISTER_GPU_PART("ipv6")
