#include <stdexcept>

#include "gpu/offload.h"

namespace tandem::gpu {

const char* gpu_mode_name(GpuMode m) {
  switch (m) {
    case GpuMode::kAsync: return "async";
    case GpuMode::kGraph: return "graph";
    case GpuMode::kMapped: return "mapped";
    case GpuMode::kPersistent: return "persistent";
  }
  return "unknown";
}

GpuMode parse_gpu_mode(const std::string& s) {
  for (GpuMode m : {GpuMode::kAsync, GpuMode::kGraph, GpuMode::kMapped, GpuMode::kPersistent}) {
    if (s == gpu_mode_name(m)) return m;
  }
  throw std::invalid_argument("unknown GPU mode '" + s + "' (async, graph, mapped, persistent)");
}

}  // namespace tandem::gpu
