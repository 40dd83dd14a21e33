// Helpers shared by the test executables.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpu/gpu_runtime.h"

namespace tandem::test {

inline std::string source_path(const std::string& rel) { return std::string(TANDEM_SOURCE_DIR) + "/" + rel; }
inline std::string shared_data_path(const std::string& rel) {
  return std::string(TANDEM_SHARED_DATA_DIR) + "/" + rel;
}

// Writes `text` to `name` in a temporary folder of this process's own ("tandem_<tag>_<pid>", so
// that tests running at once do not share files) and returns the file's path.
inline std::string write_temp_file(const std::string& tag, const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("tandem_" + tag + "_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace tandem::test

// Skips the current test, visibly, when no usable GPU is present (or the build has no CUDA).
#define TANDEM_REQUIRE_GPU()                                                   \
  do {                                                                         \
    std::string why_;                                                          \
    if (!tandem::gpu::available(&why_)) GTEST_SKIP() << "no GPU: " << why_;    \
  } while (0)
