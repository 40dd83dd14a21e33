#include "apps/ipv4/ipv4_gpu.h"

#include <algorithm>
#include <array>

#include "apps/ipv4/dir24_8_core.h"
#include "apps/ipv4/ipv4_frame_core.h"
#include "gpu/cuda_util.cuh"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::ipv4 {

namespace {

constexpr int kThreads = 256;
constexpr int kStreams = 4;
constexpr size_t kChunk = size_t{1} << 21;  // addresses per pipelined chunk (8 MiB each way)

// Each thread takes four consecutive addresses with one 16-byte load, so four independent table
// reads are in flight per thread; the grid strides over the array.
__global__ void __launch_bounds__(kThreads)
dir24_8_lookup_kernel(const uint32_t* __restrict__ tbl24, const uint32_t* __restrict__ tbl8,
                      const uint32_t* __restrict__ ips, uint32_t* __restrict__ out, size_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  const size_t tid = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const size_t n4 = n / 4;
  const uint4* ips4 = reinterpret_cast<const uint4*>(ips);
  uint4* out4 = reinterpret_cast<uint4*>(out);
  for (size_t i = tid; i < n4; i += stride) {
    const uint4 a = __ldcs(ips4 + i);  // streamed once: keep it out of the cache the table uses
    uint4 r;
    r.x = dir24_8_lookup(tbl24, tbl8, a.x);
    r.y = dir24_8_lookup(tbl24, tbl8, a.y);
    r.z = dir24_8_lookup(tbl24, tbl8, a.z);
    r.w = dir24_8_lookup(tbl24, tbl8, a.w);
    __stcs(out4 + i, r);
  }
  for (size_t i = n4 * 4 + tid; i < n; i += stride) out[i] = dir24_8_lookup(tbl24, tbl8, ips[i]);
}

struct Ipv4LookupOp {
  using In = uint32_t;
  using Out = uint32_t;
  const uint32_t* tbl24;
  const uint32_t* tbl8;
  __device__ uint32_t operator()(uint32_t ip) const { return dir24_8_lookup(tbl24, tbl8, ip); }
};

// Whole frames: the thread works on its own copy of the cell, which the runner stores back.
struct Ipv4FrameOp {
  using In = FrameCell;
  using Out = FrameCell;
  const uint32_t* tbl24;
  const uint32_t* tbl8;
  __device__ FrameCell operator()(FrameCell c) const {
    const uint32_t len = c.meta < sizeof c.frame ? c.meta : uint32_t{sizeof c.frame};
    c.meta = ipv4_forward_frame(c.frame, len, tbl24, tbl8);
    return c;
  }
};

bool is_pinned(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

class Ipv4GpuTableImpl final : public Ipv4GpuTable {
 public:
  explicit Ipv4GpuTableImpl(const Dir24_8& table) {
    gpu::require_available();
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
    tbl24_.resize(Dir24_8::kTbl24Entries);
    // Room for every group the table may ever use, so updates never move the device tables
    // (runners and in-flight kernels hold their addresses).
    tbl8_.resize(size_t{std::max<uint32_t>(table.max_tbl8_groups(), 1)} * Dir24_8::kTbl8GroupEntries);
    sync(table);
  }

  void sync(const Dir24_8& table) override {
    if (table.version() == version_) return;
    tbl24_.copy_from(table.tbl24(), Dir24_8::kTbl24Entries);
    tbl8_.copy_from(table.tbl8(), size_t{std::max<uint32_t>(table.tbl8_groups_high_water(), 1)} * Dir24_8::kTbl8GroupEntries);
    version_ = table.version();
  }

  void lookup(const uint32_t* ips, uint32_t* next_hops, size_t n) override;
  std::vector<double> time_kernel(const uint32_t* ips, uint32_t* next_hops, size_t n, int reps) override;

  size_t device_bytes() const override { return (tbl24_.size() + tbl8_.size()) * sizeof(uint32_t); }

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<Ipv4LookupOp>>(Ipv4LookupOp{tbl24_.get(), tbl8_.get()}, opts);
  }
  std::unique_ptr<gpu::OffloadRunner> make_frame_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<Ipv4FrameOp>>(Ipv4FrameOp{tbl24_.get(), tbl8_.get()}, opts);
  }

 private:
  // d_ips and d_res are device buffers from cudaMalloc (256-byte aligned), as the kernel's 16-byte
  // loads need.
  void launch(const uint32_t* d_ips, uint32_t* d_res, size_t n, cudaStream_t s) const {
    if (n == 0) return;
    const size_t blocks_needed = ((n + 3) / 4 + kThreads - 1) / kThreads;
    const int blocks = static_cast<int>(std::min<size_t>(blocks_needed, size_t(sm_count_) * 16));
    dir24_8_lookup_kernel<<<blocks, kThreads, 0, s>>>(tbl24_.get(), tbl8_.get(), d_ips, d_res, n);
    TANDEM_CUDA_CHECK_LAUNCH();
  }

  gpu::DeviceBuffer<uint32_t> tbl24_;
  gpu::DeviceBuffer<uint32_t> tbl8_;
  uint64_t version_ = ~uint64_t{0};
  int sm_count_ = 0;
  // Pipelining state, created on first use of lookup().
  std::array<std::unique_ptr<gpu::Stream>, kStreams> streams_;
  std::array<gpu::DeviceBuffer<uint32_t>, kStreams> d_in_, d_out_;
  std::array<gpu::PinnedBuffer<uint32_t>, kStreams> stage_in_, stage_out_;
};

void Ipv4GpuTableImpl::lookup(const uint32_t* ips, uint32_t* next_hops, size_t n) {
  if (!streams_[0]) {
    for (int s = 0; s < kStreams; ++s) {
      streams_[s] = std::make_unique<gpu::Stream>();
      d_in_[s].resize(kChunk);
      d_out_[s].resize(kChunk);
    }
  }
  const bool direct = is_pinned(ips) && is_pinned(next_hops);
  if (!direct && stage_in_[0].size() == 0) {
    for (int s = 0; s < kStreams; ++s) {
      stage_in_[s].resize(kChunk);
      stage_out_[s].resize(kChunk);
    }
  }
  // Per stream: the output range its last chunk must be copied to (staged mode only).
  std::array<size_t, kStreams> pend_off{}, pend_len{};
  auto drain = [&](int s) {
    streams_[s]->sync();
    if (!direct && pend_len[s]) {
      std::copy_n(stage_out_[s].get(), pend_len[s], next_hops + pend_off[s]);
      pend_len[s] = 0;
    }
  };
  size_t chunk_no = 0;
  for (size_t off = 0; off < n; off += kChunk, ++chunk_no) {
    const int s = static_cast<int>(chunk_no % kStreams);
    const size_t len = std::min(kChunk, n - off);
    cudaStream_t st = streams_[s]->get();
    if (chunk_no >= kStreams) drain(s);  // this stream's buffers are about to be reused
    const uint32_t* src = ips + off;
    uint32_t* dst = next_hops + off;
    if (!direct) {
      std::copy_n(ips + off, len, stage_in_[s].get());
      src = stage_in_[s].get();
      dst = stage_out_[s].get();
      pend_off[s] = off;
      pend_len[s] = len;
    }
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_in_[s].get(), src, len * sizeof(uint32_t), cudaMemcpyHostToDevice, st));
    launch(d_in_[s].get(), d_out_[s].get(), len, st);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(dst, d_out_[s].get(), len * sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
  }
  for (int s = 0; s < kStreams; ++s) {
    if (streams_[s]) drain(s);
  }
}

std::vector<double> Ipv4GpuTableImpl::time_kernel(const uint32_t* ips, uint32_t* next_hops, size_t n, int reps) {
  gpu::DeviceBuffer<uint32_t> d_in(n), d_out(n);
  gpu::Stream stream;
  d_in.copy_from(ips, n);
  launch(d_in.get(), d_out.get(), n, stream.get());  // warm-up: module load, caches, clocks
  stream.sync();
  std::vector<double> ms;
  gpu::Event start, stop;
  for (int r = 0; r < reps; ++r) {
    start.record(stream.get());
    launch(d_in.get(), d_out.get(), n, stream.get());
    stop.record(stream.get());
    stream.sync();
    ms.push_back(stop.since(start));
  }
  d_out.copy_to(next_hops, n);
  return ms;
}

const Ipv4GpuTable::Factory::Registrar registered{&Ipv4GpuTable::Factory::make<Ipv4GpuTableImpl>};

}  // namespace
}  // namespace tandem::ipv4

TANDEM_REGISTER_GPU_PART("ipv4")
