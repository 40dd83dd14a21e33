#include <algorithm>
#include <vector>

#include "apps/ipsec/esp_gpu.h"
#include "apps/ipsec/esp_hd.h"
#include "gpu/cuda_util.cuh"
#include "gpu/offload_runner.cuh"

namespace tandem::ipsec {

namespace {

// One frame: parse, encapsulate for its SA and number, seal. Keys and tables stay in global memory
// (read through the L1 cache).
__global__ void __launch_bounds__(gpu::detail::kOffloadThreads)
seal_kernel(const EspSaKeys* keys, const EspTunnel* tunnels, const crypto::AesTables* tables, uint8_t* bytes,
            const uint32_t* offsets, uint32_t* lengths, const uint32_t* sas, const uint64_t* seqs, uint32_t* verdicts,
            uint32_t n) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint8_t* frame = bytes + offsets[i];
    const uint32_t len = lengths[i];
    ParsedPacket pp;
    DropReason r = parse_frame(frame, len, &pp);
    EspLayout l;
    const uint32_t sa = sas[i];
    if (r == DropReason::kNone) r = esp_encapsulate(frame, len + kMaxEspGrowth, pp, tunnels[sa], seqs[i], &l);
    if (r != DropReason::kNone) {
      verdicts[i] = Verdict::drop(r);
      continue;
    }
    esp_hd_seal(keys[sa], tables, frame, l, seqs[i]);
    lengths[i] = l.frame_len;
    verdicts[i] = Verdict::port(kPortTunnel);
  }
}

class EspGpuImpl final : public EspGpu {
 public:
  EspGpuImpl(const SaTable& t, size_t max_frames, size_t max_bytes) : max_frames_(max_frames), max_bytes_(max_bytes) {
    std::vector<EspSaKeys> keys;
    std::vector<EspTunnel> tunnels;
    for (uint32_t i = 0; i < t.size(); ++i) {
      keys.push_back(esp_sa_keys(t.sa(i)));
      tunnels.push_back(t.tunnel(i));
    }
    keys_.upload(keys);
    tunnels_.upload(tunnels);
    tables_.upload(&crypto::aes_tables(), 1);
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
    h_bytes_.resize(max_bytes);
    h_out_.resize(max_bytes);
    h_out_lengths_.resize(max_frames);
    h_offsets_.resize(max_frames);
    h_lengths_.resize(max_frames);
    h_sas_.resize(max_frames);
    h_seqs_.resize(max_frames);
    h_verdicts_.resize(max_frames);
    d_bytes_.resize(max_bytes);
    d_clear_.resize(max_bytes);
    d_offsets_.resize(max_frames);
    d_lengths_.resize(max_frames);
    d_clear_lengths_.resize(max_frames);
    d_sas_.resize(max_frames);
    d_seqs_.resize(max_frames);
    d_verdicts_.resize(max_frames);
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  }

  uint8_t* bytes() override { return h_bytes_.get(); }
  uint32_t* offsets() override { return h_offsets_.get(); }
  uint32_t* lengths() override { return h_lengths_.get(); }
  uint32_t* sas() override { return h_sas_.get(); }
  uint64_t* seqs() override { return h_seqs_.get(); }
  const uint8_t* out_bytes() const override { return h_out_.get(); }
  const uint32_t* out_lengths() const override { return h_out_lengths_.get(); }
  const uint32_t* verdicts() const override { return h_verdicts_.get(); }

  void seal(size_t n, size_t used) override {
    check(n, used);
    if (n == 0) return;
    cudaStream_t s = stream_.get();
    copy_in(n, used, s);
    launch(n, s);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_out_.get(), d_bytes_.get(), used, cudaMemcpyDeviceToHost, s));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_out_lengths_.get(), d_lengths_.get(), n * 4, cudaMemcpyDeviceToHost, s));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(h_verdicts_.get(), d_verdicts_.get(), n * 4, cudaMemcpyDeviceToHost, s));
    stream_.sync();
  }

  double time_seal_kernel(size_t n, size_t used, int reps) override {
    check(n, used);
    if (n == 0 || reps < 1) return 0;
    cudaStream_t s = stream_.get();
    copy_in(n, used, s);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_clear_.get(), d_bytes_.get(), used, cudaMemcpyDeviceToDevice, s));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_clear_lengths_.get(), d_lengths_.get(), n * 4, cudaMemcpyDeviceToDevice, s));
    double total = 0;
    gpu::Event start, stop;
    for (int r = 0; r < reps; ++r) {
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_bytes_.get(), d_clear_.get(), used, cudaMemcpyDeviceToDevice, s));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_lengths_.get(), d_clear_lengths_.get(), n * 4, cudaMemcpyDeviceToDevice, s));
      start.record(s);
      launch(n, s);
      stop.record(s);
      stream_.sync();
      total += stop.since(start) / 1e3;
    }
    return total / reps;
  }

 private:
  void check(size_t n, size_t used) const {
    if (n > max_frames_ || used > max_bytes_) throw gpu::GpuError("esp gpu: batch over the runner's limits");
  }
  void copy_in(size_t n, size_t used, cudaStream_t s) {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_bytes_.get(), h_bytes_.get(), used, cudaMemcpyHostToDevice, s));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_offsets_.get(), h_offsets_.get(), n * 4, cudaMemcpyHostToDevice, s));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_lengths_.get(), h_lengths_.get(), n * 4, cudaMemcpyHostToDevice, s));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_sas_.get(), h_sas_.get(), n * 4, cudaMemcpyHostToDevice, s));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(d_seqs_.get(), h_seqs_.get(), n * 8, cudaMemcpyHostToDevice, s));
  }
  void launch(size_t n, cudaStream_t s) {
    seal_kernel<<<gpu::detail::launch_blocks(n, sm_count_), gpu::detail::kOffloadThreads, 0, s>>>(
        keys_.get(), tunnels_.get(), tables_.get(), d_bytes_.get(), d_offsets_.get(), d_lengths_.get(), d_sas_.get(),
        d_seqs_.get(), d_verdicts_.get(), static_cast<uint32_t>(n));
    TANDEM_CUDA_CHECK_LAUNCH();
  }

  size_t max_frames_, max_bytes_;
  int sm_count_ = 0;
  gpu::DeviceBuffer<EspSaKeys> keys_;
  gpu::DeviceBuffer<EspTunnel> tunnels_;
  gpu::DeviceBuffer<crypto::AesTables> tables_;
  gpu::PinnedBuffer<uint8_t> h_bytes_, h_out_;
  gpu::PinnedBuffer<uint32_t> h_offsets_, h_lengths_, h_sas_, h_verdicts_, h_out_lengths_;
  gpu::PinnedBuffer<uint64_t> h_seqs_;
  gpu::DeviceBuffer<uint8_t> d_bytes_, d_clear_;
  gpu::DeviceBuffer<uint32_t> d_offsets_, d_lengths_, d_clear_lengths_, d_sas_, d_verdicts_;
  gpu::DeviceBuffer<uint64_t> d_seqs_;
  gpu::Stream stream_;
};

const EspGpu::Factory::Registrar registered{&EspGpu::Factory::make<EspGpuImpl>};

}  // namespace
}  // namespace tandem::ipsec
