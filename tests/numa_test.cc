// NUMA placement helpers (core/numa.h) on whatever host runs the tests: one node or several.
#include "core/numa.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <sched.h>
#include <thread>

namespace tandem {
namespace {

TEST(Numa, NodesHaveTheHostsCpus) {
  const int nodes = numa_node_count();
  ASSERT_GE(nodes, 1);
  size_t cpus = 0;
  for (int n = 0; n < nodes; ++n) cpus += numa_node_cpus(n).size();
  // Where sysfs lists nodes, every online CPU is on one; a kernel without NUMA lists none.
  if (!numa_node_cpus(0).empty()) EXPECT_GE(cpus, 1u);
  EXPECT_TRUE(numa_node_cpus(-1).empty());
  EXPECT_TRUE(numa_node_cpus(4096).empty());
}

TEST(Numa, RunOnNodeKeepsTheThreadOnTheNodesCpus) {
  const std::vector<int> cpus = numa_node_cpus(0);
  if (cpus.empty()) GTEST_SKIP() << "sysfs lists no NUMA nodes here";
  std::thread([&] {
    ASSERT_TRUE(run_on_node(0));
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) EXPECT_NE(std::find(cpus.begin(), cpus.end(), c), cpus.end()) << "cpu " << c;
    }
  }).join();
  EXPECT_FALSE(run_on_node(-1));
  EXPECT_FALSE(run_on_node(4096));
}

TEST(Numa, PreferNodeKeepsTheBytesAndRefusesBadNodes) {
  const size_t bytes = 1 << 21;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 0x5a, bytes);
  std::string why;
  if (!numa_node_cpus(0).empty()) {
    // Node 0 exists: the kernel takes the policy (or has no mbind at all, and says so).
    const bool ok = prefer_node(p, bytes, 0, &why);
    if (!ok) EXPECT_NE(why.find("mbind"), std::string::npos) << why;
  }
  for (size_t i = 0; i < bytes; i += 4096) ASSERT_EQ(static_cast<unsigned char*>(p)[i], 0x5a);
  why.clear();
  EXPECT_FALSE(prefer_node(p, bytes, -1, &why));
  EXPECT_NE(why.find("out of range"), std::string::npos) << why;
  EXPECT_FALSE(prefer_node(p, bytes, numa_node_count() + 5, &why));
  EXPECT_FALSE(why.empty());
  munmap(p, bytes);
}

}  // namespace
}  // namespace tandem
