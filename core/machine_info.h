// A description of the machine a measurement ran on, for benchmark reports.
#pragma once

#include <string>

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

}  // namespace tandem
