#include "apps/dpi/dpi_gpu.h"

#include <algorithm>
#include <cstring>

#include "apps/dpi/ac_walk.cuh"
#include "gpu/cuda_util.cuh"

namespace tandem::dpi {

namespace {

constexpr uint32_t kOverflow = 0xFFFFFFFFu;  // a payload's count: more than kMaxIds ids, redo on the CPU
constexpr uint32_t kMaxIds = AhoCorasickGpu::kMaxIds;
constexpr size_t kMaxPayloads = 65536;       // per batch
constexpr int kThreads = 128;

constexpr uint32_t kSetSlots = 256;  // the per-thread set of ids found (open addressing)
static_assert(kMaxIds < kSetSlots * 4 / 5, "the set must stay sparse enough to probe quickly");

// One payload per thread. Payload k starts at bytes + start[k] (16-byte aligned, padded to a
// multiple of 16), so it is read 16 bytes per load. The distinct ids found go into a small hash
// set in the thread's local memory (cleared on the first report, so match-free payloads never
// touch it), then, sorted, to ids[first[k] ..] with one atomicAdd per thread.
__global__ void __launch_bounds__(kThreads) ac_kernel(AcView v, const uint8_t* __restrict__ bytes,
                                                      const uint32_t* __restrict__ start, const uint32_t* __restrict__ len,
                                                      uint32_t n, uint32_t* __restrict__ count, uint32_t* __restrict__ first,
                                                      uint32_t* __restrict__ ids, uint32_t* __restrict__ total) {
  __shared__ uint8_t cls[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) cls[i] = v.cls[i];
  __syncthreads();
  const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  AcView sv = v;
  sv.cls = cls;
  const uint8_t* p = bytes + start[k];
  const uint32_t L = len[k];
  uint32_t set[kSetSlots];
  uint32_t nf = 0;
  bool overflow = false;
  auto slot_of = [&](uint32_t id) {
    uint32_t h = (id * 2654435761u) >> 24;
    while (set[h] != 0 && set[h] != id) h = (h + 1) % kSetSlots;
    return h;
  };
  auto seen = [&](uint32_t id) { return nf != 0 && set[slot_of(id)] == id; };
  auto add = [&](uint32_t id) {
    if (nf == 0) {
      for (uint32_t j = 0; j < kSetSlots; ++j) set[j] = 0;
    }
    if (nf == kMaxIds) {
      overflow = true;
      return;
    }
    set[slot_of(id)] = id;
    ++nf;
  };
  ac_walk_words(sv, p, L, seen, add, [&] { return overflow; });
  if (overflow) {
    count[k] = kOverflow;
    return;
  }
  count[k] = nf;
  if (nf == 0) return;
  // Sorted here, by insertion (tens of ids; the thread's walk costs far more), so that the one
  // host thread only copies each payload's ids out.
  uint32_t c = 0;
  for (uint32_t j = 0; j < kSetSlots; ++j) {
    if (set[j]) set[c++] = set[j];
  }
  for (uint32_t i = 1; i < c; ++i) {
    const uint32_t id = set[i];
    uint32_t j = i;
    for (; j > 0 && set[j - 1] > id; --j) set[j] = set[j - 1];
    set[j] = id;
  }
  const uint32_t base = atomicAdd(total, nf);
  first[k] = base;
  for (uint32_t j = 0; j < c; ++j) ids[base + j] = set[j];
}

class AhoCorasickGpuImpl final : public AhoCorasickGpu {
 public:
  AhoCorasickGpuImpl(const AhoCorasick& ac, size_t batch_bytes);
  void patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n, std::vector<uint32_t>* out) override;
  size_t device_bytes() const override;

 private:
  const AhoCorasick* ac_ = nullptr;
  size_t batch_bytes_ = 0;
  gpu::DeviceBuffer<uint32_t> delta_, rep_begin_, rep_;
  gpu::DeviceBuffer<AcPattern> pats_;
  gpu::DeviceBuffer<uint8_t> cls_, pat_bytes_;
  AcView view_{};

  struct Slot {
    gpu::PinnedBuffer<uint8_t> h_bytes;
    gpu::PinnedBuffer<uint32_t> h_start, h_len, h_count, h_first, h_total, h_ids;
    gpu::DeviceBuffer<uint8_t> d_bytes;
    gpu::DeviceBuffer<uint32_t> d_start, d_len, d_count, d_first, d_ids, d_total;
    std::vector<uint32_t> idx;  // the batch's payloads (indices into the call's arrays), in kernel order
    gpu::Stream stream;
    gpu::Event t0, t1;
    bool busy = false;
  };
  Slot slot_[2];
};

AhoCorasickGpuImpl::AhoCorasickGpuImpl(const AhoCorasick& ac, size_t batch_bytes) {
  gpu::require_available();
  ac_ = &ac;
  batch_bytes_ = std::max<size_t>(batch_bytes, size_t{1} << 17);
  delta_.upload(ac.delta(), ac.delta_entries());
  rep_begin_.upload(ac.report_begin());
  rep_.upload(ac.reports());
  pats_.upload(ac.pattern_records());
  cls_.upload(ac.byte_classes(), 256);
  pat_bytes_.upload(ac.pattern_bytes());
  view_ = AcView{delta_.get(), cls_.get(),       rep_begin_.get(), rep_.get(),
                 pats_.get(),  pat_bytes_.get(), ac.classes(),     ac_row_magic(ac.classes())};
  // A batch holds up to batch_bytes of payload, plus one more payload (<= 64 KiB) and padding.
  const size_t cap = batch_bytes_ + 65536 + 16 * kMaxPayloads;
  for (Slot& s : slot_) {
    s.h_bytes.resize(cap);
    s.d_bytes.resize(cap);
    for (auto* h : {&s.h_start, &s.h_len, &s.h_count, &s.h_first}) h->resize(kMaxPayloads);
    for (auto* d : {&s.d_start, &s.d_len, &s.d_count, &s.d_first}) d->resize(kMaxPayloads);
    s.h_total.resize(1);
    s.d_total.resize(1);
    s.h_ids.resize(kMaxPayloads * kMaxIds);
    s.d_ids.resize(kMaxPayloads * kMaxIds);
  }
}

size_t AhoCorasickGpuImpl::device_bytes() const {
  size_t b = delta_.size() * 4 + rep_begin_.size() * 4 + rep_.size() * 4 +
             pats_.size() * sizeof(AcPattern) + cls_.size() + pat_bytes_.size();
  for (const Slot& s : slot_) b += s.d_bytes.size() + (4 * kMaxPayloads + 1 + kMaxPayloads * kMaxIds) * 4;
  return b;
}

void AhoCorasickGpuImpl::patterns_in_batch(const uint8_t* const* p, const uint32_t* len, size_t n,
                                           std::vector<uint32_t>* out) {
  stats_ = Stats{};
  // Collects a finished slot's results into `out`.
  auto finish = [&](Slot& s) {
    if (!s.busy) return;
    s.stream.sync();
    s.busy = false;
    stats_.kernel_ms += s.t1.since(s.t0);
    const uint32_t total = s.h_total[0];
    s.d_ids.copy_to(s.h_ids.get(), total);
    for (size_t k = 0; k < s.idx.size(); ++k) {
      const uint32_t i = s.idx[k];
      std::vector<uint32_t>& o = out[i];
      const uint32_t c = s.h_count[k];
      if (c == kOverflow) {
        ac_->patterns_in(p[i], len[i], &o);
        ++stats_.cpu_fallbacks;
        continue;
      }
      o.assign(s.h_ids.get() + s.h_first[k], s.h_ids.get() + s.h_first[k] + c);  // sorted by the kernel
    }
  };
  std::vector<uint32_t> batch;
  size_t next = 0, turn = 0;
  while (next < n) {
    // The next batch: payloads until batch_bytes, then longest first.
    batch.clear();
    size_t bytes = 0;
    while (next < n && batch.size() < kMaxPayloads && bytes < batch_bytes_) {
      bytes += (len[next] + 15) & ~size_t{15};
      batch.push_back(static_cast<uint32_t>(next++));
    }
    std::sort(batch.begin(), batch.end(), [len](uint32_t a, uint32_t b) { return len[a] > len[b]; });
    Slot& s = slot_[turn++ % 2];
    finish(s);
    s.idx = batch;
    size_t off = 0;
    for (size_t k = 0; k < batch.size(); ++k) {
      const uint32_t i = batch[k];
      s.h_start[k] = static_cast<uint32_t>(off);
      s.h_len[k] = len[i];
      std::memcpy(s.h_bytes.get() + off, p[i], len[i]);
      const size_t padded = (size_t{len[i]} + 15) & ~size_t{15};
      std::memset(s.h_bytes.get() + off + len[i], 0, padded - len[i]);
      off += padded;
    }
    const uint32_t nb = static_cast<uint32_t>(batch.size());
    cudaStream_t st = s.stream.get();
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_bytes.get(), s.h_bytes.get(), off ? off : 1, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_start.get(), s.h_start.get(), nb * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.d_len.get(), s.h_len.get(), nb * 4, cudaMemcpyHostToDevice, st));
    TANDEM_CUDA_CHECK(cudaMemsetAsync(s.d_total.get(), 0, 4, st));
    s.t0.record(st);
    ac_kernel<<<(nb + kThreads - 1) / kThreads, kThreads, 0, st>>>(view_, s.d_bytes.get(), s.d_start.get(), s.d_len.get(), nb,
                                                                   s.d_count.get(), s.d_first.get(), s.d_ids.get(),
                                                                   s.d_total.get());
    TANDEM_CUDA_CHECK_LAUNCH();
    s.t1.record(st);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.h_count.get(), s.d_count.get(), nb * 4, cudaMemcpyDeviceToHost, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.h_first.get(), s.d_first.get(), nb * 4, cudaMemcpyDeviceToHost, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s.h_total.get(), s.d_total.get(), 4, cudaMemcpyDeviceToHost, st));
    s.busy = true;
    ++stats_.batches;
  }
  finish(slot_[0]);
  finish(slot_[1]);
}

const AhoCorasickGpu::Factory::Registrar registered{&AhoCorasickGpu::Factory::make<AhoCorasickGpuImpl>};

}  // namespace
}  // namespace tandem::dpi
