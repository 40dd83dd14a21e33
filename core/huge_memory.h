// Large, zero-filled, 2 MiB-aligned allocations backed by transparent hugepages where the kernel
// allows it. Lookup tables and the packet pool live here: with 4 KiB pages, random accesses to a
// 64 MiB table miss the TLB on almost every lookup.
#pragma once

#include <cstddef>

namespace tandem {

class HugeRegion {
 public:
  HugeRegion() = default;
  // Maps `bytes` (rounded up to 2 MiB). Throws std::runtime_error naming the size on failure.
  explicit HugeRegion(size_t bytes);
  ~HugeRegion();
  HugeRegion(const HugeRegion&) = delete;
  HugeRegion& operator=(const HugeRegion&) = delete;
  HugeRegion(HugeRegion&& o) noexcept;
  HugeRegion& operator=(HugeRegion&& o) noexcept;

  void* data() const { return p_; }
  size_t size() const { return bytes_; }
  // How much of the region the kernel backs with 2 MiB pages now (its VMAs' AnonHugePages in
  // /proc/self/smaps; 0 where that cannot be read). THP is advisory: a fragmented machine hands
  // out 4 KiB pages, and a table walked at random then misses the TLB, so benches report this.
  size_t huge_bytes() const;

 private:
  void* map_ = nullptr;  // the whole mapping, including alignment slack
  size_t map_bytes_ = 0;
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// The kernel's transparent-hugepage mode ("always", "madvise", "never", or "unknown"), for reports.
const char* transparent_hugepage_mode();

}  // namespace tandem
