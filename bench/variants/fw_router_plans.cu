#include "bench/variants/fw_router_plans.h"

#include <algorithm>
#include <cstring>

#include "apps/fwrouter/fw_router_core.h"
#include "gpu/cuda_util.cuh"

namespace tandem::fwrouter {

namespace {

constexpr int kThreads = 256;
constexpr size_t kChunk = size_t{1} << 20;  // headers per synchronous round of decide()

// One thread per header (grid-stride), in every kernel, so that the plans differ only in how the
// work is cut into kernels.
__global__ void __launch_bounds__(kThreads)
fused_kernel(FwRouterGpu::DeviceTables t, const acl::Header* __restrict__ in, uint32_t* __restrict__ out, size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = fw_router_decide(t.tree, t.actions, t.default_action, t.tbl24, t.tbl8, in[i]);
  }
}

// The fused kernel with the tables read from the device root, as the app's runners read them.
__global__ void __launch_bounds__(kThreads)
fused_root_kernel(const FwRouterGpu::DeviceTables* root, const acl::Header* __restrict__ in, uint32_t* __restrict__ out,
                  size_t n) {
  const FwRouterGpu::DeviceTables& t = *root;
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
lpm_kernel(FwRouterGpu::DeviceTables t, const acl::Header* __restrict__ in, const uint32_t* __restrict__ rule,
           uint32_t* __restrict__ out, size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = fw_router_route(rule[i], t.actions, t.default_action, t.tbl24, t.tbl8, in[i].dst);
  }
}

class FwRouterGpuPlansImpl final : public FwRouterGpuPlans {
 public:
  explicit FwRouterGpuPlansImpl(const FwRouterGpu& tables) : t_(tables.device_tables()), root_(tables.device_root()) {
    gpu::require_available();
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
  }
  void decide(GpuPlan plan, const acl::Header* headers, uint32_t* out, size_t n) override;
  GpuPlanTimes time_plans(const acl::Header* headers, size_t n, int reps, uint32_t* fused_out,
                          uint32_t* split_out) override;

 private:
  FwRouterGpu::DeviceTables t_;
  const FwRouterGpu::DeviceTables* root_;
  int sm_count_ = 0;
  // Batch buffers (decide() and time_plans()), grown on demand.
  size_t cap_ = 0;
  gpu::DeviceBuffer<acl::Header> d_in_;
  gpu::DeviceBuffer<uint32_t> d_rule_, d_out_;
  gpu::PinnedBuffer<acl::Header> h_in_;
  gpu::PinnedBuffer<uint32_t> h_out_;
  std::unique_ptr<gpu::Stream> stream_;

  void reserve(size_t n) {
    if (!stream_) stream_ = std::make_unique<gpu::Stream>();
    if (n <= cap_) return;
    d_in_.resize(n);
    d_rule_.resize(n);
    d_out_.resize(n);
    h_in_.resize(n);
    h_out_.resize(n);
    cap_ = n;
  }

  // The same grid for every kernel: at most 32 blocks per multiprocessor, one header per thread up
  // to that (1 M headers on an H100/H200 take ~4100 blocks).
  int grid(size_t n) const {
    const size_t blocks = (n + kThreads - 1) / kThreads;
    return static_cast<int>(std::clamp<size_t>(blocks, 1, size_t(sm_count_) * 32));
  }
  void classify(size_t n, cudaStream_t s) const {
    classify_kernel<<<grid(n), kThreads, 0, s>>>(t_.tree, d_in_.get(), d_rule_.get(), n);
    TANDEM_CUDA_CHECK_LAUNCH();
  }
  void lpm(size_t n, cudaStream_t s) const {
    lpm_kernel<<<grid(n), kThreads, 0, s>>>(t_, d_in_.get(), d_rule_.get(), d_out_.get(), n);
    TANDEM_CUDA_CHECK_LAUNCH();
  }
  void launch(GpuPlan plan, size_t n, cudaStream_t s) const {
    if (n == 0) return;
    if (plan == GpuPlan::kSplit) {
      classify(n, s);
      lpm(n, s);
      return;
    }
    if (plan == GpuPlan::kFusedRoot) {
      fused_root_kernel<<<grid(n), kThreads, 0, s>>>(root_, d_in_.get(), d_out_.get(), n);
    } else {
      fused_kernel<<<grid(n), kThreads, 0, s>>>(t_, d_in_.get(), d_out_.get(), n);
    }
    TANDEM_CUDA_CHECK_LAUNCH();
  }
  // Fills the results with 0xFDFDFDFD, which no decision gives (next hops fit in 24 bits; the
  // markers are 0xFFFFFFFE and 0xFFFFFFFF), so that a kernel that wrote nothing cannot pass with
  // the results the other plan left there.
  void poison(size_t n, cudaStream_t s) const {
    TANDEM_CUDA_CHECK(cudaMemsetAsync(d_out_.get(), 0xFD, n * sizeof(uint32_t), s));
  }
  // Pinned h_in_ -> device, the plan, device -> pinned h_out_, on the stream.
  void round_trip(GpuPlan plan, size_t n, cudaStream_t s) const {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_in_.get(), h_in_.get(), n * sizeof(acl::Header), cudaMemcpyHostToDevice, s));
    launch(plan, n, s);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_out_.get(), d_out_.get(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
  }
};

void FwRouterGpuPlansImpl::decide(GpuPlan plan, const acl::Header* headers, uint32_t* out, size_t n) {
  reserve(std::min(n, kChunk));
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t len = std::min(kChunk, n - off);
    std::memcpy(static_cast<void*>(h_in_.get()), headers + off, len * sizeof(acl::Header));
    poison(len, stream_->get());
    round_trip(plan, len, stream_->get());
    stream_->sync();
    std::memcpy(out + off, h_out_.get(), len * sizeof(uint32_t));
  }
}

GpuPlanTimes FwRouterGpuPlansImpl::time_plans(const acl::Header* headers, size_t n, int reps, uint32_t* fused_out,
                                              uint32_t* split_out) {
  GpuPlanTimes t;
  if (n == 0) return t;
  reps = std::max(reps, 1);
  reserve(n);
  cudaStream_t s = stream_->get();
  std::memcpy(static_cast<void*>(h_in_.get()), headers, n * sizeof(acl::Header));
  gpu::Event start, stop;
  // Records the stream's work from f() between two events, in milliseconds.
  auto timed = [&](std::vector<double>& into, auto&& f) {
    start.record(s);
    f();
    stop.record(s);
    stream_->sync();
    into.push_back(stop.since(start));
  };
  // Warm-up: module load, clocks, the tables into L2 as far as they fit.
  round_trip(GpuPlan::kFused, n, s);
  round_trip(GpuPlan::kSplit, n, s);
  stream_->sync();
  for (int r = 0; r < reps; ++r) {
    // Which plan goes first alternates, so that neither always follows the other's footprint in
    // the caches (or a copy engine's idle time).
    const bool fused_first = r % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == fused_first) {
        timed(t.fused, [&] { launch(GpuPlan::kFused, n, s); });
        timed(t.fused_root, [&] { launch(GpuPlan::kFusedRoot, n, s); });
      } else {
        timed(t.split, [&] { launch(GpuPlan::kSplit, n, s); });
      }
    }
    timed(t.classify_only, [&] { classify(n, s); });
    timed(t.lpm_only, [&] { lpm(n, s); });  // on the rule indices the classify kernel just wrote
    for (int k = 0; k < 2; ++k) {
      if (r == reps - 1) poison(n, s);  // the results kept are the plan's own (outside the timing)
      if ((k == 0) == fused_first) {
        timed(t.fused_h2h, [&] { round_trip(GpuPlan::kFused, n, s); });
        if (r == reps - 1) std::memcpy(fused_out, h_out_.get(), n * sizeof(uint32_t));
      } else {
        timed(t.split_h2h, [&] { round_trip(GpuPlan::kSplit, n, s); });
        if (r == reps - 1) std::memcpy(split_out, h_out_.get(), n * sizeof(uint32_t));
      }
    }
  }
  return t;
}

const FwRouterGpuPlans::Factory::Registrar registered{&FwRouterGpuPlans::Factory::make<FwRouterGpuPlansImpl>};

}  // namespace
}  // namespace tandem::fwrouter
