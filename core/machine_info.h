// A description of the machine a measurement ran on, for benchmark reports.
#pragma once

#include <string>
#include <vector>

namespace tandem {

struct MachineInfo {
  std::string cpu_model;    // /proc/cpuinfo "model name"
  int logical_cpus = 0;     // online CPUs
  double mem_gib = 0;       // MemTotal
  std::string kernel;       // uname -r
  std::string hostname;
  std::string thp_mode;     // transparent hugepages: always / madvise / never
  std::string compiler;     // compiler that built this binary
};

MachineInfo machine_info();

// Pins the calling thread to logical CPU `cpu`. Returns false when the CPU does not exist or is
// not allowed (the thread then runs where the scheduler puts it).
bool pin_this_thread(int cpu);

// "2-5,8,10-11" -> {2, 3, 4, 5, 8, 10, 11}. Throws std::invalid_argument naming the bad part.
std::vector<int> parse_cpu_list(const std::string& s);

}  // namespace tandem
