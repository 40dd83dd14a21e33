// The dpi app's GPU paths: whole frames (its frame core in the shared frame and resident runners)
// and items (dpi_item_gpu.h).
#include "apps/dpi/dpi_app_core.h"
#include "apps/dpi/dpi_item_gpu.h"
#include "apps/registry.h"
#include "gpu/device_core.cuh"
#include "gpu/frame_runner.cuh"
#include "gpu/offload_runner.cuh"

TANDEM_REGISTER_FRAME_CORE(tandem::dpi::DpiCore)

namespace tandem::dpi {
namespace {

// The program comes from the root (one address for every thread: the loads are served from the
// cache), which changes only between batches.
struct DpiItemOp {
  using In = DpiItem;
  using Out = uint32_t;
  const DpiProgram* root;
  __device__ uint32_t operator()(const DpiItem& it) const { return dpi_item_result(*root, it); }
};

class DpiGpuProgramImpl final : public DpiGpuProgram {
 public:
  explicit DpiGpuProgramImpl(const DpiCore& core) : device_((gpu::require_available(), core)) {
    root_.upload(&device_.core().program, 1);
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(0));  // the runners' streams do not wait for the copy
  }
  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<DpiItemOp>>(DpiItemOp{root_.get()}, opts);
  }
  DpiProgram* device_root() const override { return root_.get(); }
  gpu::UploadedVersion upload(const DpiCore& core) const override {
    auto copy = std::make_shared<gpu::DeviceCore<DpiCore>>(core);
    return gpu::UploadedVersion::of(copy->core().program, copy, copy->device_bytes());
  }

 private:
  gpu::DeviceCore<DpiCore> device_;
  gpu::DeviceBuffer<DpiProgram> root_;
};

const DpiGpuProgram::Factory::Registrar registered{&DpiGpuProgram::Factory::make<DpiGpuProgramImpl>};

}  // namespace
}  // namespace tandem::dpi

TANDEM_REGISTER_GPU_PART("dpi")
