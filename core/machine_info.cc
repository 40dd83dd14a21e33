#include "core/machine_info.h"

#include <pthread.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

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

bool pin_this_thread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

std::vector<int> parse_cpu_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    const auto dash = part.find('-');
    try {
      size_t used = 0;
      if (dash == std::string::npos) {
        out.push_back(std::stoi(part, &used));
        if (used != part.size()) throw std::invalid_argument("");
      } else {
        size_t u1 = 0, u2 = 0;
        const int a = std::stoi(part.substr(0, dash), &u1), b = std::stoi(part.substr(dash + 1), &u2);
        if (u1 != dash || u2 != part.size() - dash - 1 || a > b) throw std::invalid_argument("");
        for (int c = a; c <= b; ++c) out.push_back(c);
      }
    } catch (const std::exception&) {
      throw std::invalid_argument("bad CPU list part '" + part + "' (want e.g. 2-5,8)");
    }
    if (out.back() < 0) throw std::invalid_argument("bad CPU list part '" + part + "'");
  }
  if (out.empty()) throw std::invalid_argument("empty CPU list");
  return out;
}

}  // namespace tandem
