// The GPU runner of crypto_vectors_test's jobs (crypto_vectors_gpu.h): one thread per job, each
// running run_vector_job, the same function the test runs on the host, with the AES tables in
// global memory. Compiled into that test only (apps/crypto/CMakeLists.txt), not into the apps.
#include <algorithm>
#include <vector>

#include "apps/crypto/crypto_vectors_gpu.h"
#include "gpu/cuda_util.cuh"
#include "gpu/offload_runner.cuh"

namespace tandem::crypto {
namespace {

__global__ void __launch_bounds__(gpu::detail::kOffloadThreads)
vector_jobs_kernel(const VectorJob* jobs, size_t n, const uint8_t* arena, uint8_t* out, const AesTables* t,
                   uint8_t* status) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    status[i] = run_vector_job(jobs[i], arena, out, t);
  }
}

class VectorJobsGpuImpl final : public VectorJobsGpu {
 public:
  VectorJobsGpuImpl() {
    TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0));
    tables_.upload(&aes_tables(), 1);
  }

  void run(const std::vector<uint8_t>& arena, const std::vector<VectorJob>& jobs, size_t out_bytes,
           std::vector<uint8_t>* out, std::vector<uint8_t>* status) override {
    out->assign(out_bytes, 0);
    status->assign(jobs.size(), 0);
    if (jobs.empty()) return;
    gpu::DeviceBuffer<uint8_t> d_arena, d_out, d_status;
    gpu::DeviceBuffer<VectorJob> d_jobs;
    d_arena.upload(arena);
    d_jobs.upload(jobs);
    d_out.upload(*out);
    d_status.upload(*status);
    vector_jobs_kernel<<<gpu::detail::launch_blocks(jobs.size(), sm_count_), gpu::detail::kOffloadThreads>>>(
        d_jobs.get(), jobs.size(), d_arena.get(), d_out.get(), tables_.get(), d_status.get());
    TANDEM_CUDA_CHECK_LAUNCH();
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
    d_out.copy_to(out->data(), out_bytes);
    d_status.copy_to(status->data(), jobs.size());
  }

 private:
  int sm_count_ = 0;
  gpu::DeviceBuffer<AesTables> tables_;
};

const VectorJobsGpu::Factory::Registrar registered{&VectorJobsGpu::Factory::make<VectorJobsGpuImpl>};

}  // namespace
}  // namespace tandem::crypto
