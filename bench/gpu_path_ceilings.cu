#include <algorithm>
#include <barrier>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_report.h"
#include "bench/gpu_path_ceilings.h"
#include "gpu/cuda_util.cuh"

namespace tandem::bench {

namespace {

constexpr uint32_t kFrame = 64;

// Frames done over a timed window that starts, on every GPU at once, at the barrier.
struct Measured {
  uint64_t frames = 0;
  double seconds = 0;
};
constexpr int kThreads = 256;

// Each thread: one frame read (four 16-byte uncached loads), 8 bytes rewritten, a verdict written.
__global__ void touch_frames(uint8_t* frames, size_t stride, uint32_t* verdicts, size_t n) {
  const size_t step = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step) {
    const uint4* f = reinterpret_cast<const uint4*>(frames + i * stride);
    const uint4 a = __ldcv(f), b = __ldcv(f + 1), c = __ldcv(f + 2), d = __ldcv(f + 3);
    const uint32_t sum = a.x ^ b.y ^ c.z ^ d.w;
    *reinterpret_cast<uint2*>(frames + i * stride + 16) = make_uint2(b.x + 1, b.y ^ sum);
    verdicts[i] = sum & 3;
  }
}

// The same work with four lanes per frame, each reading one 16-byte word: a warp reads eight
// frames per instruction in 64-byte pieces (what the resident kernel does), instead of 32 frames
// in 16-byte pieces, four times over.
__global__ void touch_frames_coop(uint8_t* frames, size_t stride, uint32_t* verdicts, size_t n) {
  const size_t step = size_t{gridDim.x} * blockDim.x / 4;
  const uint32_t w = threadIdx.x % 4;
  for (size_t i = (size_t{blockIdx.x} * blockDim.x + threadIdx.x) / 4; i < n; i += step) {
    const uint4 v = __ldcv(reinterpret_cast<const uint4*>(frames + i * stride) + w);
    if (w == 1) *reinterpret_cast<uint2*>(frames + i * stride + 16) = make_uint2(v.x + 1, v.y);
    if (w == 0) verdicts[i] = v.x & 3;
  }
}

// Whole frames of `len` bytes (a multiple of 16) read by a warp each, 512 bytes per instruction,
// and a verdict written: the bandwidth of the GPU's reads of host memory over PCIe.
__global__ void read_frames_whole(const uint8_t* frames, size_t stride, uint32_t len, uint32_t* verdicts, size_t n) {
  const uint32_t lane = threadIdx.x % 32;
  const size_t warps = size_t{gridDim.x} * blockDim.x / 32;
  for (size_t i = (size_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; i < n; i += warps) {
    uint32_t x = 0;
    for (uint32_t off = lane * 16; off + 16 <= len; off += 512) {
      const uint4 v = __ldcv(reinterpret_cast<const uint4*>(frames + i * stride + off));
      x ^= v.x ^ v.w;
    }
    x = __reduce_xor_sync(0xffffffffu, x);
    if (lane == 0) verdicts[i] = x & 3;
  }
}

double seconds_of(const std::chrono::steady_clock::time_point& t0) { return seconds_since(t0); }

// `frames` frames `stride` bytes apart in mapped memory, and a verdict each, worked on by
// launch(frames, verdicts, stream) again and again for at least min_seconds (timed from `go`).
template <class Launch>
Measured mapped_frames(size_t stride, size_t frames, double min_seconds, std::barrier<>* go, Launch&& launch) {
  gpu::PinnedBuffer<uint8_t> buf(frames * stride, cudaHostAllocMapped);
  gpu::PinnedBuffer<uint32_t> verdicts(frames, cudaHostAllocMapped);
  std::fill(buf.get(), buf.get() + frames * stride, uint8_t{7});
  uint8_t* d = nullptr;
  uint32_t* dv = nullptr;
  TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), buf.get(), 0));
  TANDEM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dv), verdicts.get(), 0));
  gpu::Stream st;
  launch(d, dv, st.get());
  st.sync();
  if (go) go->arrive_and_wait();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t done = 0;
  do {
    for (int k = 0; k < 4; ++k) launch(d, dv, st.get());
    TANDEM_CUDA_CHECK_LAUNCH();
    st.sync();
    done += 4 * frames;
  } while (seconds_of(t0) < min_seconds);
  return {done, seconds_of(t0)};
}

// Whole frames of `len` bytes in 2 KiB cells, each read by a warp.
Measured whole_frames(uint32_t len, size_t frames, double min_seconds, int sms, std::barrier<>* go) {
  constexpr size_t kStride = 2048;
  return mapped_frames(kStride, frames, min_seconds, go, [&](uint8_t* d, uint32_t* dv, cudaStream_t st) {
    read_frames_whole<<<sms * 8, kThreads, 0, st>>>(d, kStride, len, dv, frames);
  });
}

// Frames in place in mapped memory, `stride` bytes apart.
Measured in_place(size_t stride, size_t frames, bool coop, double min_seconds, int sms, std::barrier<>* go) {
  const int blocks = sms * 8;
  return mapped_frames(stride, frames, min_seconds, go, [&](uint8_t* d, uint32_t* dv, cudaStream_t st) {
    if (coop) {
      touch_frames_coop<<<blocks, kThreads, 0, st>>>(d, stride, dv, frames);
    } else {
      touch_frames<<<blocks, kThreads, 0, st>>>(d, stride, dv, frames);
    }
  });
}

// Back-to-back frames copied in by batches, processed in device memory, verdicts (and frames)
// copied back; four streams overlap the copies of consecutive batches.
Measured dma(size_t batch, bool frames_back, double min_seconds, int sms, std::barrier<>* go) {
  constexpr int kStreams = 4;
  gpu::PinnedBuffer<uint8_t> host(batch * kFrame * kStreams);
  gpu::PinnedBuffer<uint32_t> hv(batch * kStreams);
  std::fill(host.get(), host.get() + batch * kFrame * kStreams, uint8_t{7});
  struct S {
    gpu::Stream st;
    gpu::DeviceBuffer<uint8_t> f;
    gpu::DeviceBuffer<uint32_t> v;
  };
  std::vector<S> s(kStreams);
  for (auto& x : s) {
    x.f.resize(batch * kFrame);
    x.v.resize(batch);
  }
  const int blocks = std::min<int>(sms * 8, static_cast<int>((batch + kThreads - 1) / kThreads));
  auto one = [&](int k) {
    cudaStream_t st = s[k].st.get();
    uint8_t* hf = host.get() + size_t(k) * batch * kFrame;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(s[k].f.get(), hf, batch * kFrame, cudaMemcpyHostToDevice, st));
    touch_frames<<<blocks, kThreads, 0, st>>>(s[k].f.get(), kFrame, s[k].v.get(), batch);
    TANDEM_CUDA_CHECK_LAUNCH();
    if (frames_back) TANDEM_CUDA_CHECK(cudaMemcpyAsync(hf, s[k].f.get(), batch * kFrame, cudaMemcpyDeviceToHost, st));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(hv.get() + size_t(k) * batch, s[k].v.get(), batch * 4, cudaMemcpyDeviceToHost, st));
  };
  for (int k = 0; k < kStreams; ++k) one(k);
  TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  if (go) go->arrive_and_wait();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t done = 0;
  do {
    for (int r = 0; r < 8; ++r) {
      for (int k = 0; k < kStreams; ++k) one(k);
      done += batch * kStreams;
    }
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  } while (seconds_of(t0) < min_seconds);
  return {done, seconds_of(t0)};
}

}  // namespace

std::vector<Ceiling> measure_gpu_path_ceilings(int reps, double min_seconds, int gpus) {
  gpu::require_available();
  if (gpus < 1 || gpus > gpu::device_count()) {
    throw gpu::GpuError("ceilings: " + std::to_string(gpus) + " GPUs asked, this host has " + std::to_string(gpu::device_count()));
  }
  int sms = 0;
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  struct Probe {
    const char* name;
    Measured (*run)(double, int, std::barrier<>*);
  };
  const Probe probes[] = {
      {"mapped, in place in 2 KiB cells, a thread per frame",
       [](double m, int n, std::barrier<>* go) { return in_place(2048, size_t{1} << 19, false, m, n, go); }},
      {"mapped, in place in 2 KiB cells, 4 lanes per frame",
       [](double m, int n, std::barrier<>* go) { return in_place(2048, size_t{1} << 19, true, m, n, go); }},
      {"mapped, in place, 64 B-strided frames, a thread per frame",
       [](double m, int n, std::barrier<>* go) { return in_place(64, size_t{1} << 22, false, m, n, go); }},
      {"mapped, in place, 64 B-strided frames, 4 lanes per frame",
       [](double m, int n, std::barrier<>* go) { return in_place(64, size_t{1} << 22, true, m, n, go); }},
      {"DMA, batches of 65,536 back-to-back frames, verdicts back",
       [](double m, int n, std::barrier<>* go) { return dma(65536, false, m, n, go); }},
      {"DMA, batches of 65,536 back-to-back frames, frames and verdicts back",
       [](double m, int n, std::barrier<>* go) { return dma(65536, true, m, n, go); }},
      {"mapped, whole 1,504 B frames read from 2 KiB cells (x 1.504 = GB/s)",
       [](double m, int n, std::barrier<>* go) { return whole_frames(1504, size_t{1} << 17, m, n, go); }},
  };
  std::vector<Ceiling> out;
  for (const Probe& p : probes) {
    std::vector<double> v;
    for (int r = 0; r < reps; ++r) {
      // Every GPU at once, each from its own thread with its own buffers: what they reach together.
      // Each GPU sets up alone, then all start timing together at the barrier; the figure is
      // every GPU's frames over the longest window.
      std::vector<Measured> each(gpus);
      std::vector<std::string> error(gpus);
      std::barrier<> go(gpus);
      std::vector<std::thread> threads;
      for (int g = 0; g < gpus; ++g) {
        threads.emplace_back([&, g] {
          bool arrived = false;
          try {
            gpu::set_device(g);
            int sm = sms;
            TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, g));
            each[g] = p.run(min_seconds, sm, gpus > 1 ? &go : nullptr);
            arrived = true;
          } catch (const std::exception& e) {
            error[g] = e.what();
          }
          if (!arrived && gpus > 1) go.arrive_and_drop();  // the others must not wait for this one
        });
      }
      for (auto& t : threads) t.join();
      for (const std::string& e : error) {
        if (!e.empty()) throw gpu::GpuError(e);
      }
      uint64_t frames = 0;
      double longest = 0;
      for (const Measured& x : each) {
        frames += x.frames;
        longest = std::max(longest, x.seconds);
      }
      v.push_back(longest > 0 ? frames / longest / 1e6 : 0);
    }
    out.push_back({gpus > 1 ? std::string(p.name) + ", " + std::to_string(gpus) + " GPUs at once" : p.name, median(v)});
  }
  return out;
}

}  // namespace tandem::bench
