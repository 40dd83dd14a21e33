#include "apps/fwrouter/fw_router_gpu.h"

#include <algorithm>
#include <cstring>

#include "apps/fwrouter/fw_router_core.h"
#include "gpu/cuda_util.cuh"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::fwrouter {

namespace {

constexpr int kThreads = 256;
constexpr size_t kChunk = size_t{1} << 20;  // headers per synchronous round of decide()

// Device pointers to every table a decision reads, passed by value to the kernels.
struct DeviceTables {
  acl::HsView tree;
  const uint8_t* actions;
  uint8_t default_action;
  const uint32_t* tbl24;
  const uint32_t* tbl8;
};

// The fused plan as the offload runners' per-item operation: the app's GPU path.
struct FwRouterOp {
  using In = acl::Header;
  using Out = uint32_t;
  DeviceTables t;
  __device__ uint32_t operator()(const acl::Header& h) const {
    return fw_router_decide(t.tree, t.actions, t.default_action, t.tbl24, t.tbl8, h);
  }
};

// One thread per header (grid-stride), in every kernel, so that the plans differ only in how the
// work is cut into kernels.
__global__ void __launch_bounds__(kThreads)
fused_kernel(DeviceTables t, const acl::Header* __restrict__ in, uint32_t* __restrict__ out, size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = fw_router_decide(t.tree, t.actions, t.default_action, t.tbl24, t.tbl8, in[i]);
  }
}

// Split, first kernel: the firewall alone; each packet's rule index goes to device memory.
__global__ void __launch_bounds__(kThreads)
classify_kernel(acl::HsView tree, const acl::Header* __restrict__ in, uint32_t* __restrict__ rule, size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    rule[i] = acl::classify_hypersplit(tree, in[i]);
  }
}

// Split, second kernel: reads the rule index back and the header's destination, and routes the
// accepted packets.
__global__ void __launch_bounds__(kThreads)
lpm_kernel(DeviceTables t, const acl::Header* __restrict__ in, const uint32_t* __restrict__ rule,
           uint32_t* __restrict__ out, size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = fw_router_route(rule[i], t.actions, t.default_action, t.tbl24, t.tbl8, in[i].dst);
  }
}

}  // namespace

struct FwRouterGpu::Impl {
  gpu::DeviceBuffer<acl::HsNode> nodes;
  gpu::DeviceBuffer<uint32_t> leaf_rules;
  gpu::DeviceBuffer<acl::Rule> rules;
  gpu::DeviceBuffer<uint8_t> actions;
  gpu::DeviceBuffer<uint32_t> tbl24, tbl8;
  DeviceTables t{};
  int sm_count = 0;
  // Batch buffers (decide() and time_plans()), grown on demand.
  size_t cap = 0;
  gpu::DeviceBuffer<acl::Header> d_in;
  gpu::DeviceBuffer<uint32_t> d_rule, d_out;
  gpu::PinnedBuffer<acl::Header> h_in;
  gpu::PinnedBuffer<uint32_t> h_out;
  std::unique_ptr<gpu::Stream> stream;

  void reserve(size_t n) {
    if (!stream) stream = std::make_unique<gpu::Stream>();
    if (n <= cap) return;
    d_in.resize(n);
    d_rule.resize(n);
    d_out.resize(n);
    h_in.resize(n);
    h_out.resize(n);
    cap = n;
  }

  // The same grid for every kernel: at most 32 blocks per multiprocessor, one header per thread up
  // to that (1 M headers on an H100/H200 take ~4100 blocks).
  int grid(size_t n) const {
    const size_t blocks = (n + kThreads - 1) / kThreads;
    return static_cast<int>(std::clamp<size_t>(blocks, 1, size_t(sm_count) * 32));
  }
  void classify(size_t n, cudaStream_t s) const {
    classify_kernel<<<grid(n), kThreads, 0, s>>>(t.tree, d_in.get(), d_rule.get(), n);
    TANDEM_CUDA_CHECK_LAUNCH();
  }
  void lpm(size_t n, cudaStream_t s) const {
    lpm_kernel<<<grid(n), kThreads, 0, s>>>(t, d_in.get(), d_rule.get(), d_out.get(), n);
    TANDEM_CUDA_CHECK_LAUNCH();
  }
  void launch(GpuPlan plan, size_t n, cudaStream_t s) const {
    if (n == 0) return;
    if (plan == GpuPlan::kSplit) {
      classify(n, s);
      lpm(n, s);
      return;
    }
    fused_kernel<<<grid(n), kThreads, 0, s>>>(t, d_in.get(), d_out.get(), n);
    TANDEM_CUDA_CHECK_LAUNCH();
  }
  // Fills the results with 0xFDFDFDFD, which no decision gives (next hops fit in 24 bits; the
  // markers are 0xFFFFFFFE and 0xFFFFFFFF), so that a kernel that wrote nothing cannot pass with
  // the results the other plan left there.
  void poison(size_t n, cudaStream_t s) const {
    TANDEM_CUDA_CHECK(cudaMemsetAsync(d_out.get(), 0xFD, n * sizeof(uint32_t), s));
  }
  // Pinned h_in -> device, the plan, device -> pinned h_out, on the stream.
  void round_trip(GpuPlan plan, size_t n, cudaStream_t s) const {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_in.get(), h_in.get(), n * sizeof(acl::Header), cudaMemcpyHostToDevice, s));
    launch(plan, n, s);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_out.get(), d_out.get(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
  }
};

FwRouterGpu::FwRouterGpu(const FwRouterTables& tables) : impl_(std::make_unique<Impl>()) {
  gpu::require_available();
  Impl& m = *impl_;
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&m.sm_count, cudaDevAttrMultiProcessorCount, 0));
  const acl::HyperSplit& hs = *tables.tree;
  m.nodes.upload(hs.nodes());
  m.leaf_rules.upload(hs.leaf_rules());
  m.rules.upload(hs.rules());
  m.actions.upload(tables.actions);
  const ipv4::Dir24_8& d = *tables.table;
  m.tbl24.upload(d.tbl24(), ipv4::Dir24_8::kTbl24Entries);
  m.tbl8.upload(d.tbl8(), size_t{std::max<uint32_t>(d.tbl8_groups_high_water(), 1)} * ipv4::Dir24_8::kTbl8GroupEntries);
  m.t.tree = hs.view();
  m.t.tree.nodes = m.nodes.get();
  m.t.tree.leaf_rules = m.leaf_rules.get();
  m.t.tree.rules = m.rules.get();
  m.t.actions = m.actions.get();
  m.t.default_action = tables.default_action;
  m.t.tbl24 = m.tbl24.get();
  m.t.tbl8 = m.tbl8.get();
}

FwRouterGpu::~FwRouterGpu() = default;

std::unique_ptr<gpu::OffloadRunner> FwRouterGpu::make_runner(const gpu::OffloadOptions& opts) const {
  return std::make_unique<gpu::OffloadRunnerImpl<FwRouterOp>>(FwRouterOp{impl_->t}, opts);
}

void FwRouterGpu::decide(GpuPlan plan, const acl::Header* headers, uint32_t* out, size_t n) {
  Impl& m = *impl_;
  m.reserve(std::min(n, kChunk));
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t len = std::min(kChunk, n - off);
    std::memcpy(static_cast<void*>(m.h_in.get()), headers + off, len * sizeof(acl::Header));
    m.poison(len, m.stream->get());
    m.round_trip(plan, len, m.stream->get());
    m.stream->sync();
    std::memcpy(out + off, m.h_out.get(), len * sizeof(uint32_t));
  }
}

GpuPlanTimes FwRouterGpu::time_plans(const acl::Header* headers, size_t n, int reps, uint32_t* fused_out,
                                     uint32_t* split_out) {
  Impl& m = *impl_;
  GpuPlanTimes t;
  if (n == 0) return t;
  reps = std::max(reps, 1);
  m.reserve(n);
  cudaStream_t s = m.stream->get();
  std::memcpy(static_cast<void*>(m.h_in.get()), headers, n * sizeof(acl::Header));
  gpu::Event start, stop;
  // Records the stream's work from f() between two events, in milliseconds.
  auto timed = [&](std::vector<double>& into, auto&& f) {
    start.record(s);
    f();
    stop.record(s);
    m.stream->sync();
    into.push_back(stop.since(start));
  };
  // Warm-up: module load, clocks, the tables into L2 as far as they fit.
  m.round_trip(GpuPlan::kFused, n, s);
  m.round_trip(GpuPlan::kSplit, n, s);
  m.stream->sync();
  for (int r = 0; r < reps; ++r) {
    // Which plan goes first alternates, so that neither always follows the other's footprint in
    // the caches (or a copy engine's idle time).
    const bool fused_first = r % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == fused_first) {
        timed(t.fused, [&] { m.launch(GpuPlan::kFused, n, s); });
      } else {
        timed(t.split, [&] { m.launch(GpuPlan::kSplit, n, s); });
      }
    }
    timed(t.classify_only, [&] { m.classify(n, s); });
    timed(t.lpm_only, [&] { m.lpm(n, s); });  // on the rule indices the classify kernel just wrote
    for (int k = 0; k < 2; ++k) {
      if (r == reps - 1) m.poison(n, s);  // the results kept are the plan's own (outside the timing)
      if ((k == 0) == fused_first) {
        timed(t.fused_h2h, [&] { m.round_trip(GpuPlan::kFused, n, s); });
        if (r == reps - 1) std::memcpy(fused_out, m.h_out.get(), n * sizeof(uint32_t));
      } else {
        timed(t.split_h2h, [&] { m.round_trip(GpuPlan::kSplit, n, s); });
        if (r == reps - 1) std::memcpy(split_out, m.h_out.get(), n * sizeof(uint32_t));
      }
    }
  }
  return t;
}

size_t FwRouterGpu::device_bytes() const {
  const Impl& m = *impl_;
  return m.nodes.size() * sizeof(acl::HsNode) + m.leaf_rules.size() * sizeof(uint32_t) +
         m.rules.size() * sizeof(acl::Rule) + m.actions.size() + (m.tbl24.size() + m.tbl8.size()) * sizeof(uint32_t);
}

}  // namespace tandem::fwrouter

TANDEM_REGISTER_GPU_PART("fw-router")
