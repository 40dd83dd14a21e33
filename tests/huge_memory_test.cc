// HugeRegion: zero-filled, 2 MiB-aligned, and its report of how much of it sits on 2 MiB pages
// (which the kernel may refuse: only bounds can be checked everywhere).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/huge_memory.h"

namespace tandem {
namespace {

size_t process_anon_huge_bytes() {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  size_t total = 0, kb = 0;
  while (std::getline(f, line)) {
    if (std::sscanf(line.c_str(), "AnonHugePages: %zu kB", &kb) == 1) total += kb << 10;
  }
  return total;
}

TEST(HugeRegion, AlignedZeroedAndItsHugePagesWithinBounds) {
  EXPECT_EQ(HugeRegion().huge_bytes(), 0u);
  HugeRegion a(size_t{16} << 20), b(size_t{3} << 20);
  for (const HugeRegion* r : {&a, &b}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r->data()) % (size_t{2} << 20), 0u);
    EXPECT_EQ(r->size() % (size_t{2} << 20), 0u);
    const auto* p = static_cast<const uint8_t*>(r->data());
    EXPECT_EQ(p[0] | p[r->size() / 2] | p[r->size() - 1], 0);
    EXPECT_LE(r->huge_bytes(), r->size());
    EXPECT_EQ(r->huge_bytes() % (size_t{2} << 20), 0u);
  }
  // Each region counts only its own mappings: together no more than the whole process has.
  EXPECT_LE(a.huge_bytes() + b.huge_bytes(), process_anon_huge_bytes());
  std::printf("THP %s: %zu of %zu and %zu of %zu bytes on 2 MiB pages\n", transparent_hugepage_mode(), a.huge_bytes(),
              a.size(), b.huge_bytes(), b.size());
}

}  // namespace
}  // namespace tandem
