// A fuzz input written to a file of this process's own (the loaders under test read files),
// removed when the check is done. Shared by the fuzz targets that feed files and by the tests
// that run their checks under any compiler.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace tandem::fuzz {

// path is empty where the input could not be written.
struct InputFile {
  std::string path;
  InputFile(const uint8_t* data, size_t size, const char* suffix)
      : path("/tmp/tandem-fuzz-" + std::to_string(::getpid()) + suffix) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    const bool ok = f && std::fwrite(data, 1, size, f) == size;
    if (f) std::fclose(f);
    if (!ok) {
      std::remove(path.c_str());
      path.clear();
    }
  }
  ~InputFile() {
    if (!path.empty()) std::remove(path.c_str());
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
};

}  // namespace tandem::fuzz
