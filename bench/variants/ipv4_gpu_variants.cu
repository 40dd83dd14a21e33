#include "bench/variants/ipv4_gpu_variants.h"

#include "apps/ipv4/dir24_8_kernel.cuh"
#include "apps/ipv4/ipv4_frame_core.h"
#include "gpu/cuda_util.cuh"
#include "gpu/offload_runner.cuh"

namespace tandem::ipv4 {

namespace {

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

class Ipv4GpuVariantsImpl final : public Ipv4GpuVariants {
 public:
  explicit Ipv4GpuVariantsImpl(const Ipv4GpuTable& table) : tables_(table.device_arrays()) {
    gpu::require_available();
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
  }

  std::vector<double> time_kernel(const uint32_t* ips, uint32_t* next_hops, size_t n, int reps,
                                  double min_seconds) override {
    gpu::DeviceBuffer<uint32_t> d_in(n), d_out(n);
    gpu::Stream stream;
    d_in.copy_from(ips, n);
    launch(d_in.get(), d_out.get(), n, stream.get());  // warm-up: module load, caches, clocks
    stream.sync();
    std::vector<double> ms;
    gpu::Event start, stop;
    for (int r = 0; r < reps; ++r) {
      // Launches queue back to back; the window is checked every kCheck launches, so the GPU
      // idles only at those syncs.
      constexpr int kCheck = 8;
      start.record(stream.get());
      uint64_t launches = 0;
      double elapsed_ms = 0;
      do {
        for (int k = 0; k < (min_seconds > 0 ? kCheck : 1); ++k) {
          launch(d_in.get(), d_out.get(), n, stream.get());
          ++launches;
        }
        stop.record(stream.get());
        stream.sync();
        elapsed_ms = stop.since(start);
      } while (elapsed_ms < min_seconds * 1e3);
      ms.push_back(elapsed_ms / static_cast<double>(launches));
    }
    d_out.copy_to(next_hops, n);
    return ms;
  }

  std::unique_ptr<gpu::OffloadRunner> make_frame_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<Ipv4FrameOp>>(Ipv4FrameOp{tables_.tbl24, tables_.tbl8}, opts);
  }

 private:
  void launch(const uint32_t* d_ips, uint32_t* d_res, size_t n, cudaStream_t s) const {
    launch_dir24_8_lookup(tables_.tbl24, tables_.tbl8, d_ips, d_res, n, sm_count_, s);
  }

  Ipv4GpuTable::DeviceArrays tables_;
  int sm_count_ = 0;
};

const Ipv4GpuVariants::Factory::Registrar registered{&Ipv4GpuVariants::Factory::make<Ipv4GpuVariantsImpl>};

}  // namespace
}  // namespace tandem::ipv4
