// Test support: a range of address space reserved without backing (MAP_NORESERVE), of which only
// the pages written are committed, for tables laid out at offsets no test could fill for real.
#pragma once

#include <sys/mman.h>

#include <cstddef>

namespace tandem::test {

class ReservedRange {
 public:
  explicit ReservedRange(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    p_ = p == MAP_FAILED ? nullptr : p;
  }
  ~ReservedRange() {
    if (p_) munmap(p_, bytes_);
  }
  ReservedRange(const ReservedRange&) = delete;
  ReservedRange& operator=(const ReservedRange&) = delete;
  // Null where the range could not be reserved (ulimit -v, overcommit refused).
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  size_t bytes_;
};

}  // namespace tandem::test
