// Helpers shared by the test executables.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gpu/gpu_runtime.h"

namespace tandem::test {

inline std::string source_path(const std::string& rel) { return std::string(TANDEM_SOURCE_DIR) + "/" + rel; }
inline std::string shared_data_path(const std::string& rel) {
  return std::string(TANDEM_SHARED_DATA_DIR) + "/" + rel;
}

}  // namespace tandem::test

// Skips the current test, visibly, when no usable GPU is present (or the build has no CUDA).
#define TANDEM_REQUIRE_GPU()                                                   \
  do {                                                                         \
    std::string why_;                                                          \
    if (!tandem::gpu::available(&why_)) GTEST_SKIP() << "no GPU: " << why_;    \
  } while (0)
