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

struct DpiItemOp {
  using In = DpiItem;
  using Out = uint32_t;
  DpiProgram program;
  __device__ uint32_t operator()(const DpiItem& it) const { return dpi_item_result(program, it); }
};

class DpiGpuProgramImpl final : public DpiGpuProgram {
 public:
  explicit DpiGpuProgramImpl(const DpiCore& core) : device_((gpu::require_available(), core)) {}
  std::unique_ptr<gpu::OffloadRunner> make_runner(const gpu::OffloadOptions& opts) const override {
    return std::make_unique<gpu::OffloadRunnerImpl<DpiItemOp>>(DpiItemOp{device_.core().program}, opts);
  }

 private:
  gpu::DeviceCore<DpiCore> device_;
};

const DpiGpuProgram::Factory::Registrar registered{&DpiGpuProgram::Factory::make<DpiGpuProgramImpl>};

}  // namespace
}  // namespace tandem::dpi

TANDEM_REGISTER_GPU_PART("dpi")
