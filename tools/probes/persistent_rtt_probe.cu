// A probe of the persistent kernel's round trip in plain CUDA, without Tandem's runner: one or more
// resident blocks poll a host-mapped doorbell, copy N 4-byte items from host-mapped memory to
// host-mapped memory through shared memory, and set done words. Variants: blocks polling the host
// each (1..8), threads per block, __ldcv vs __ldcg loads, the host reading every result, and the
// input starting 16 bytes past a 128-byte line. It showed that block 0 alone is fastest and that
// the 16-byte offset cost ~1 us at N = 1024 (bench/results/2026-11-22-h200-engine/probe-*.log).
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/rtt_probe tools/probes/persistent_rtt_probe.cu && /tmp/rtt_probe
// main() runs the last set of variants tried; the first set is in run() calls of probe-1.log.
#include <cuda_runtime.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>

struct alignas(128) Ctl {
  volatile uint64_t bell;
  alignas(128) volatile uint32_t done[32];
};

__device__ __forceinline__ uint64_t ld_acq_sys(const volatile uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_rel_sys(volatile uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}

template <int kThreads>
__global__ void __launch_bounds__(kThreads) probe(Ctl* ctl, const uint32_t* in, uint32_t* out, int use_ldcv) {
  __shared__ uint64_t bell;
  __shared__ uint4 stage[2048];
  uint64_t seen = 0;
  for (;;) {
    if (threadIdx.x == 0) {
      uint64_t b;
      while ((b = ld_acq_sys(&ctl->bell)) == seen) {
      }
      bell = b;
    }
    __syncthreads();
    const uint64_t b = bell;
    if (b >> 63) return;
    seen = b;
    const uint32_t seq = uint32_t(b >> 32);
    const uint32_t n = uint32_t(b & 0xFFFFFF);
    // this block's share, in 16-byte words
    const uint32_t words = (n + 3) / 4;
    const uint32_t per = (words + gridDim.x - 1) / gridDim.x;
    const uint32_t w0 = min(words, blockIdx.x * per), w1 = min(words, w0 + per);
    const uint4* src = reinterpret_cast<const uint4*>(in);
    uint4* dst = reinterpret_cast<uint4*>(out);
    for (uint32_t w = w0 + threadIdx.x; w < w1; w += kThreads) {
      uint4 v = use_ldcv ? __ldcv(src + w) : __ldcg(src + w);
      stage[w - w0] = v;
    }
    __syncthreads();
    for (uint32_t w = w0 + threadIdx.x; w < w1; w += kThreads) dst[w] = stage[w - w0];
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      st_rel_sys(&ctl->done[blockIdx.x], seq);
    }
  }
}

template <int kThreads>
void run(int blocks, int use_ldcv, const std::vector<int>& sizes, bool read_all = false, int in_off = 0) {
  Ctl* ctl;
  uint32_t *in, *out;
  cudaHostAlloc(&ctl, sizeof(Ctl), cudaHostAllocMapped);
  cudaHostAlloc(&in, 1 << 16, cudaHostAllocMapped);
  cudaHostAlloc(&out, 1 << 16, cudaHostAllocMapped);
  memset((void*)ctl, 0, sizeof(Ctl));
  Ctl* dctl;
  uint32_t *din, *dout;
  cudaHostGetDevicePointer((void**)&dctl, ctl, 0);
  cudaHostGetDevicePointer((void**)&din, in, 0);
  in += in_off;
  din += in_off;
  cudaHostGetDevicePointer((void**)&dout, out, 0);
  cudaStream_t st;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  probe<kThreads><<<blocks, kThreads, 0, st>>>(dctl, din, dout, use_ldcv);
  uint32_t seq = 0;
  std::printf("threads %4d blocks %2d %s read_all %d in_off %d:", kThreads, blocks, use_ldcv ? "ldcv" : "ldcg", read_all, in_off);
  for (int n : sizes) {
    std::vector<double> us;
    for (int r = 0; r < 2000; ++r) {
      for (int i = 0; i < n; ++i) in[i] = r * 7 + i;
      const auto t0 = std::chrono::steady_clock::now();
      std::atomic_thread_fence(std::memory_order_release);
      ++seq;
      ctl->bell = (uint64_t(seq) << 32) | n;
      for (int b = 0; b < blocks; ++b) {
        while (ctl->done[b] != seq) {
        }
      }
      const auto t1 = std::chrono::steady_clock::now();
      bool ok = out[n - 1] == uint32_t(r * 7 + n - 1) && out[0] == uint32_t(r * 7);
      if (read_all) {
        uint32_t bad = 0;
        for (int i = 0; i < n; ++i) bad += out[i] != uint32_t(r * 7 + i);
        ok = ok && bad == 0;
      }
      if (!ok) { std::printf(" WRONG"); }
      if (r >= 100) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    std::printf("  N=%d %.2f (%.2f)", n, us[us.size() / 2], us[0]);
  }
  std::printf("\n");
  ctl->bell = uint64_t(1) << 63;
  cudaStreamSynchronize(st);
  cudaFreeHost(ctl); cudaFreeHost(in - in_off); cudaFreeHost(out);
  cudaStreamDestroy(st);
}

int main() {
  std::vector<int> sizes = {4, 64, 256, 1024, 2048};
  run<256>(1, 1, sizes, false, 0);
  run<256>(1, 1, sizes, true, 0);
  run<256>(1, 1, sizes, false, 4);
  run<256>(1, 1, sizes, true, 4);
  run<256>(1, 1, sizes, false, 0);
  return 0;
}
