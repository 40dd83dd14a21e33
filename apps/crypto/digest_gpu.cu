#include <stdexcept>
#include <string>

#include "apps/crypto/digest_gpu.h"
#include "gpu/cuda_util.cuh"
#include "gpu/offload_runner.cuh"

namespace tandem::crypto {
namespace {

__global__ void __launch_bounds__(gpu::detail::kOffloadThreads)
digest_kernel(DigestAlgo algo, const uint8_t* bytes, const uint32_t* offsets, const uint32_t* lengths, size_t n,
              uint8_t* out) {
  const uint32_t db = digest_bytes(algo);
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    digest(algo, bytes + offsets[i], lengths[i], out + i * db);
  }
}

class DigestGpuImpl final : public DigestGpu {
 public:
  DigestGpuImpl() { TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0)); }

  void digests(DigestAlgo algo, const uint8_t* bytes, size_t total, const uint32_t* offsets, const uint32_t* lengths,
               size_t n, uint8_t* out) override {
    for (size_t k = 0; k < n; ++k) {
      if (offsets[k] > total || lengths[k] > total - offsets[k]) {
        throw std::invalid_argument("digests: message " + std::to_string(k) + " lies outside the " +
                                    std::to_string(total) + " bytes");
      }
    }
    if (n == 0) return;
    const size_t db = digest_bytes(algo);
    grow(bytes_, total);
    grow(offsets_, n);
    grow(lengths_, n);
    grow(out_, n * db);
    bytes_.copy_from(bytes, total);
    offsets_.copy_from(offsets, n);
    lengths_.copy_from(lengths, n);
    digest_kernel<<<gpu::detail::launch_blocks(n, sm_count_), gpu::detail::kOffloadThreads>>>(
        algo, bytes_.get(), offsets_.get(), lengths_.get(), n, out_.get());
    TANDEM_CUDA_CHECK_LAUNCH();
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
    out_.copy_to(out, n * db);
  }

 private:
  template <class T>
  static void grow(gpu::DeviceBuffer<T>& b, size_t n) {
    if (b.size() < n || b.size() == 0) b.resize(n ? n : 1);
  }

  int sm_count_ = 0;
  gpu::DeviceBuffer<uint8_t> bytes_, out_;
  gpu::DeviceBuffer<uint32_t> offsets_, lengths_;
};

const DigestGpu::Factory::Registrar registered{&DigestGpu::Factory::make<DigestGpuImpl>};

}  // namespace
}  // namespace tandem::crypto
