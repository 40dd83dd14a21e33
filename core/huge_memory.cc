#include "core/huge_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tandem {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

HugeRegion::HugeRegion(size_t bytes) {
  bytes_ = (bytes + kHugePage - 1) & ~(kHugePage - 1);
  map_bytes_ = bytes_ + kHugePage;
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
              -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::runtime_error("cannot map " + std::to_string(bytes_ >> 20) +
                             " MiB: " + std::strerror(errno));
  }
  const auto addr = reinterpret_cast<uintptr_t>(map_);
  p_ = reinterpret_cast<void*>((addr + kHugePage - 1) & ~(kHugePage - 1));
  madvise(p_, bytes_, MADV_HUGEPAGE);  // advisory: 4 KiB pages if THP is off
  // Touched now, as DPDK's memory is at start-up: the first touch of a page costs a fault (tens of
  // microseconds to zero a 2 MiB page), which must never land on a packet's latency.
  std::memset(p_, 0, bytes_);
}

HugeRegion::~HugeRegion() {
  if (map_) munmap(map_, map_bytes_);
}

HugeRegion::HugeRegion(HugeRegion&& o) noexcept { *this = std::move(o); }

HugeRegion& HugeRegion::operator=(HugeRegion&& o) noexcept {
  std::swap(map_, o.map_);
  std::swap(map_bytes_, o.map_bytes_);
  std::swap(p_, o.p_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

size_t HugeRegion::huge_bytes() const {
  if (!p_) return 0;
  std::ifstream f("/proc/self/smaps");
  const auto lo = reinterpret_cast<uintptr_t>(p_), hi = lo + bytes_;
  std::string line;
  bool inside = false;
  size_t total = 0;
  while (std::getline(f, line)) {
    unsigned long a = 0, b = 0;
    char dash = 0;
    // A VMA's header: "start-end perms ..."; its fields follow ("AnonHugePages:   2048 kB").
    if (std::sscanf(line.c_str(), "%lx%c%lx", &a, &dash, &b) == 3 && dash == '-' && line.find(' ') != std::string::npos &&
        line.find(':') > line.find(' ')) {
      inside = a < hi && b > lo;
      continue;
    }
    size_t kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %zu kB", &kb) == 1) total += kb << 10;
  }
  return std::min(total, bytes_);
}

const char* transparent_hugepage_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  if (!std::getline(f, s)) return "unknown";
  if (s.find("[always]") != std::string::npos) return "always";
  if (s.find("[madvise]") != std::string::npos) return "madvise";
  if (s.find("[never]") != std::string::npos) return "never";
  return "unknown";
}

}  // namespace tandem
