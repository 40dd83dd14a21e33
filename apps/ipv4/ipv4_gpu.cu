#include "apps/ipv4/ipv4_gpu.h"

#include <algorithm>
#include <array>

#include "apps/ipv4/dir24_8_core.h"
#include "apps/ipv4/dir24_8_kernel.cuh"
#include "gpu/cuda_util.cuh"
#include "apps/registry.h"
#include "gpu/offload_runner.cuh"

namespace tandem::ipv4 {

namespace {

constexpr int kStreams = 4;
constexpr size_t kChunk = size_t{1} << 21;  // addresses per pipelined chunk (8 MiB each way)

struct Ipv4LookupOp {
  using In = uint32_t;
  using Out = uint32_t;
  const uint32_t* tbl24;
  const uint32_t* tbl8;
  __device__ uint32_t operator()(uint32_t ip) const { return dir24_8_lookup(tbl24, tbl8, ip); }
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

  size_t device_bytes() const override { return (tbl24_.size() + tbl8_.size()) * sizeof(uint32_t); }

  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<Ipv4LookupOp>>(Ipv4LookupOp{tbl24_.get(), tbl8_.get()}, opts);
  }
  DeviceArrays device_arrays() const override { return {tbl24_.get(), tbl8_.get()}; }

 private:
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
    launch_dir24_8_lookup(tbl24_.get(), tbl8_.get(), d_in_[s].get(), d_out_[s].get(), len, sm_count_, st);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(dst, d_out_[s].get(), len * sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
  }
  for (int s = 0; s < kStreams; ++s) {
    if (streams_[s]) drain(s);
  }
}

const Ipv4GpuTable::Factory::Registrar registered{&Ipv4GpuTable::Factory::make<Ipv4GpuTableImpl>};

}  // namespace
}  // namespace tandem::ipv4

TANDEM_REGISTER_GPU_PART("ipv4")
