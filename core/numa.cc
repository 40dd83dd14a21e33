#include "core/numa.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "core/machine_info.h"

namespace tandem {

namespace {

// The kernel's mbind(2) constants (linux/mempolicy.h), to do without libnuma's headers.
constexpr int kMpolPreferred = 1;
constexpr unsigned kMpolMfMove = 1u << 1;

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

int numa_node_count() {
  // The kernel's list of nodes with CPUs ("0-1"); memory-only nodes (CXL, HBM) are not counted.
  const std::string list = read_line("/sys/devices/system/node/has_cpu");
  if (list.empty()) return 1;
  try {
    const std::vector<int> nodes = parse_cpu_list(list);
    return nodes.empty() ? 1 : static_cast<int>(nodes.size());
  } catch (const std::invalid_argument&) {
    return 1;
  }
}

std::vector<int> numa_node_cpus(int node) {
  if (node < 0) return {};
  const std::string list = read_line("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
  if (list.empty()) return {};
  try {
    return parse_cpu_list(list);
  } catch (const std::invalid_argument&) {
    return {};
  }
}

bool run_on_node(int node) {
  const std::vector<int> cpus = numa_node_cpus(node);
  if (cpus.empty()) return false;
  // Within what the thread may use now (taskset, cgroups): never widen it.
  cpu_set_t allowed, set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
  int n = 0;
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE && CPU_ISSET(c, &allowed)) {
      CPU_SET(c, &set);
      ++n;
    }
  }
  return n > 0 && sched_setaffinity(0, sizeof set, &set) == 0;
}

bool prefer_node(void* p, size_t bytes, int node, std::string* why) {
  if (node < 0 || node >= 64) {
    if (why) *why = "node " + std::to_string(node) + " is out of range";
    return false;
  }
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  unsigned long mask = 1ul << node;
  const long rc = syscall(SYS_mbind, start, end - start, kMpolPreferred, &mask, 64ul, kMpolMfMove);
  if (rc != 0) {
    if (why) *why = std::string("mbind: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace tandem
