// The dpi app's item path on the GPU: a device copy of the flat program (dpi_program.h) and
// offload runners whose per-item operation is dpi_item_result (dpi_app_core.h: both stages on one
// payload of up to 504 bytes). The runners read the program's device pointers from a root in
// device memory, so that live rule updates (dpi_control.h) can replace the program between
// batches: each program updates make is uploaded whole (upload) and its root replaces the one
// there (gpu::DeviceTableVersions). The implementation is dpi_app_gpu.cu's (gpu/gpu_factory.h):
// without CUDA, create() throws.
#pragma once

#include <memory>

#include "apps/dpi/dpi_app_core.h"
#include "gpu/gpu_factory.h"
#include "gpu/offload.h"
#include "gpu/table_updates.h"

namespace tandem::dpi {

class DpiGpuProgram : public gpu::GpuTable {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<DpiGpuProgram>(const DpiCore&)>;
  // Copies the program's arrays to the GPU. Throws gpu::GpuError.
  static std::unique_ptr<DpiGpuProgram> create(const DpiCore& core) { return Factory::create(core); }

  // Where the runners read their DpiProgram (device memory).
  virtual DpiProgram* device_root() const = 0;
  // A device copy of `core`'s program: its root (a DpiProgram of device pointers), and what owns
  // its device memory. Throws gpu::GpuError.
  virtual gpu::UploadedVersion upload(const DpiCore& core) const = 0;
};

}  // namespace tandem::dpi
