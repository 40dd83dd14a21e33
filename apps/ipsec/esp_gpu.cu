#include <algorithm>
#include <vector>

#include "apps/ipsec/esp_gpu.h"
#include "apps/ipsec/esp_hd.h"
#include "gpu/cuda_util.cuh"
#include "gpu/offload_runner.cuh"

namespace tandem::ipsec {

namespace {

struct Batch {
  uint8_t* bytes;
  const uint32_t* offsets;
  uint32_t* lengths;
  const uint32_t* sas;
  const uint64_t* seqs;
  uint32_t* verdicts;
  uint32_t n;
};

// One cleartext frame: parse, encapsulate for its SA and number, seal.
__device__ uint32_t seal_frame(const EspSaKeys& k, const EspTunnel& t, const crypto::AesTables* tables, uint8_t* frame,
                               uint32_t* len, uint64_t seq) {
  ParsedPacket pp;
  DropReason r = parse_frame(frame, *len, &pp);
  EspLayout l;
  if (r == DropReason::kNone) r = esp_encapsulate(frame, *len + kMaxEspGrowth, pp, t, seq, &l);
  if (r != DropReason::kNone) return Verdict::drop(r);
  esp_hd_seal(k, tables, frame, l, seq);
  *len = l.frame_len;
  return Verdict::port(kPortTunnel);
}

// One ESP frame: verify, decrypt, check and decapsulate.
__device__ uint32_t open_frame(const EspSaKeys& k, const EspTunnel& t, const crypto::AesTables* tables, uint8_t* frame,
                               uint32_t* len, uint64_t seq) {
  ParsedPacket pp;
  DropReason r = parse_frame(frame, *len, &pp);
  EspInbound in;
  EspLayout l;
  if (r == DropReason::kNone) r = esp_inbound(frame, pp, &in);
  if (r == DropReason::kNone) r = esp_in_layout(in, t.shape, &l);
  if (r == DropReason::kNone) r = esp_hd_open(k, tables, frame, l, seq);
  uint32_t inner = 0;
  if (r == DropReason::kNone) r = esp_decapsulate(frame, l, &inner);
  if (r != DropReason::kNone) return Verdict::drop(r);
  *len = inner;
  return Verdict::port(kPortDecrypted);
}

// Keys and tables stay in global memory (read through the L1 cache).
template <EspGpu::Op kOp>
__global__ void __launch_bounds__(gpu::detail::kOffloadThreads)
esp_kernel(const EspSaKeys* keys, const EspTunnel* tunnels, const crypto::AesTables* tables, Batch b) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < b.n; i += stride) {
    const uint32_t sa = b.sas[i];
    uint32_t len = b.lengths[i];
    b.verdicts[i] = kOp == EspGpu::Op::kSeal ? seal_frame(keys[sa], tunnels[sa], tables, b.bytes + b.offsets[i], &len, b.seqs[i])
                                             : open_frame(keys[sa], tunnels[sa], tables, b.bytes + b.offsets[i], &len, b.seqs[i]);
    b.lengths[i] = len;
  }
}

class EspGpuImpl final : public EspGpu {
 public:
  EspGpuImpl(const SaTable& t, size_t max_frames, size_t max_bytes, int slots)
      : max_frames_(max_frames), max_bytes_(max_bytes) {
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
    for (int i = 0; i < std::clamp(slots, 1, 8); ++i) slots_.push_back(std::make_unique<Slot>(max_frames, max_bytes));
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  }

  int slots() const override { return static_cast<int>(slots_.size()); }
  uint8_t* bytes(int s) override { return slots_[s]->h_in.get(); }
  uint32_t* offsets(int s) override { return slots_[s]->h_offsets.get(); }
  uint32_t* lengths(int s) override { return slots_[s]->h_lengths.get(); }
  uint32_t* sas(int s) override { return slots_[s]->h_sas.get(); }
  uint64_t* seqs(int s) override { return slots_[s]->h_seqs.get(); }
  const uint8_t* out_bytes(int s) const override { return slots_[s]->h_out.get(); }
  const uint32_t* out_lengths(int s) const override { return slots_[s]->h_out_lengths.get(); }
  const uint32_t* verdicts(int s) const override { return slots_[s]->h_verdicts.get(); }

  void submit(int slot, Op op, size_t n, size_t used) override {
    check(n, used);
    Slot& s = *slots_[slot];
    s.n = n;
    if (n == 0) return;
    copy_in(s, n, used);
    launch(s, op, n);
    cudaStream_t st = s.stream.get();
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.h_out.get(), s.d_bytes.get(), used, cudaMemcpyDeviceToHost, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.h_out_lengths.get(), s.d_lengths.get(), n * 4, cudaMemcpyDeviceToHost, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.h_verdicts.get(), s.d_verdicts.get(), n * 4, cudaMemcpyDeviceToHost, st));
  }

  void wait(int slot) override {
    Slot& s = *slots_[slot];
    if (s.n == 0) return;
    s.stream.sync();
    TANDEM_CUDA_CHECK(cudaGetLastError());
  }

  double time_kernel(int slot, Op op, size_t n, size_t used, int reps) override {
    check(n, used);
    if (n == 0 || reps < 1) return 0;
    Slot& s = *slots_[slot];
    cudaStream_t st = s.stream.get();
    copy_in(s, n, used);
    gpu::DeviceBuffer<uint8_t> clear(used);
    gpu::DeviceBuffer<uint32_t> clear_lengths(n);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(clear.get(), s.d_bytes.get(), used, cudaMemcpyDeviceToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(clear_lengths.get(), s.d_lengths.get(), n * 4, cudaMemcpyDeviceToDevice, st));
    double total = 0;
    gpu::Event start, stop;
    for (int r = 0; r < reps; ++r) {
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_bytes.get(), clear.get(), used, cudaMemcpyDeviceToDevice, st));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_lengths.get(), clear_lengths.get(), n * 4, cudaMemcpyDeviceToDevice, st));
      start.record(st);
      launch(s, op, n);
      stop.record(st);
      s.stream.sync();
      total += stop.since(start) / 1e3;
    }
    return total / reps;
  }

 private:
  struct Slot {
    Slot(size_t frames, size_t bytes) {
      h_in.resize(bytes);
      h_out.resize(bytes);
      h_offsets.resize(frames);
      h_lengths.resize(frames);
      h_out_lengths.resize(frames);
      h_sas.resize(frames);
      h_seqs.resize(frames);
      h_verdicts.resize(frames);
      d_bytes.resize(bytes);
      d_offsets.resize(frames);
      d_lengths.resize(frames);
      d_sas.resize(frames);
      d_seqs.resize(frames);
      d_verdicts.resize(frames);
    }
    gpu::PinnedBuffer<uint8_t> h_in, h_out;
    gpu::PinnedBuffer<uint32_t> h_offsets, h_lengths, h_out_lengths, h_sas, h_verdicts;
    gpu::PinnedBuffer<uint64_t> h_seqs;
    gpu::DeviceBuffer<uint8_t> d_bytes;
    gpu::DeviceBuffer<uint32_t> d_offsets, d_lengths, d_sas, d_verdicts;
    gpu::DeviceBuffer<uint64_t> d_seqs;
    gpu::Stream stream;
    size_t n = 0;
  };

  void check(size_t n, size_t used) const {
    if (n > max_frames_ || used > max_bytes_) throw gpu::GpuError("esp gpu: batch over the runner's limits");
  }
  void copy_in(Slot& s, size_t n, size_t used) {
    cudaStream_t st = s.stream.get();
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_bytes.get(), s.h_in.get(), used, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_offsets.get(), s.h_offsets.get(), n * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_lengths.get(), s.h_lengths.get(), n * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_sas.get(), s.h_sas.get(), n * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_seqs.get(), s.h_seqs.get(), n * 8, cudaMemcpyHostToDevice, st));
  }
  void launch(Slot& s, Op op, size_t n) {
    const Batch b{s.d_bytes.get(), s.d_offsets.get(), s.d_lengths.get(), s.d_sas.get(),
                  s.d_seqs.get(), s.d_verdicts.get(), static_cast<uint32_t>(n)};
    const int blocks = gpu::detail::launch_blocks(n, sm_count_);
    if (op == Op::kSeal) {
      esp_kernel<Op::kSeal><<<blocks, gpu::detail::kOffloadThreads, 0, s.stream.get()>>>(keys_.get(), tunnels_.get(),
                                                                                          tables_.get(), b);
    } else {
      esp_kernel<Op::kOpen><<<blocks, gpu::detail::kOffloadThreads, 0, s.stream.get()>>>(keys_.get(), tunnels_.get(),
                                                                                          tables_.get(), b);
    }
    TANDEM_CUDA_CHECK_LAUNCH();
  }

  size_t max_frames_, max_bytes_;
  int sm_count_ = 0;
  gpu::DeviceBuffer<EspSaKeys> keys_;
  gpu::DeviceBuffer<EspTunnel> tunnels_;
  gpu::DeviceBuffer<crypto::AesTables> tables_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

const EspGpu::Factory::Registrar registered{&EspGpu::Factory::make<EspGpuImpl>};

}  // namespace
}  // namespace tandem::ipsec
