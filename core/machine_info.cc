#include "core/machine_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#include "core/huge_memory.h"

namespace tandem {

MachineInfo machine_info() {
  MachineInfo m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  }
  m.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    if (key == "MemTotal:") {
      double kib = 0;
      meminfo >> kib;
      m.mem_gib = kib / (1024.0 * 1024.0);
      break;
    }
    meminfo.ignore(1 << 10, '\n');
  }
  utsname u{};
  if (uname(&u) == 0) {
    m.kernel = u.release;
    m.hostname = u.nodename;
  }
  m.thp_mode = transparent_hugepage_mode();
#if defined(__clang__)
  m.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  m.compiler = "gcc " __VERSION__;
#endif
  return m;
}

}  // namespace tandem
