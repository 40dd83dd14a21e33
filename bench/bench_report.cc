#include "bench/bench_report.h"

#include <sstream>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "core/machine_info.h"
#include "gpu/gpu_runtime.h"
#include "io/output_file.h"

namespace tandem::bench {

long long hugepage_bytes_in(const void* p, size_t len) {
  std::ifstream smaps("/proc/self/smaps");
  const auto lo = reinterpret_cast<uintptr_t>(p), hi = lo + len;
  bool inside = false;
  long long total = -1;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long a = 0, b = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &a, &b) == 2) {
      inside = a < hi && b > lo;
      continue;
    }
    long long kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %lld kB", &kb) == 1) total = (total < 0 ? 0 : total) + kb * 1024;
  }
  return total;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::json machine_json() {
  const MachineInfo m = machine_info();
  nlohmann::json j = {{"cpu_model", m.cpu_model},     {"logical_cpus", m.logical_cpus},
                      {"mem_gib", m.mem_gib},         {"kernel", m.kernel},
                      {"hostname", m.hostname},       {"transparent_hugepages", m.thp_mode},
                      {"compiler", m.compiler}};
  std::string why;
  if (gpu::available(&why)) {
    const gpu::DeviceInfo d = gpu::device_info();
    j["gpu"] = {{"name", d.name},
                {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                {"sm_count", d.sm_count},
                {"memory_gib", d.global_mem_bytes / double(1u << 30)},
                {"l2_mib", d.l2_bytes / double(1u << 20)},
                {"driver_version", d.driver_version},
                {"runtime_version", d.runtime_version},
                {"pci_bus_id", d.pci_bus_id}};
    j["gpu_count"] = gpu::device_count();
    nlohmann::json all = nlohmann::json::array();
    for (int g = 0; g < gpu::device_count(); ++g) {
      const gpu::DeviceInfo x = gpu::device_info(g);
      all.push_back({{"name", x.name}, {"pci_bus_id", x.pci_bus_id}, {"numa_node", gpu::numa_node(g)}});
    }
    j["gpus"] = all;
  } else {
    j["gpu"] = nullptr;
    j["gpu_unavailable_reason"] = why;
  }
  const std::time_t now = std::time(nullptr);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  j["date_utc"] = ts;
  return j;
}

void print_table(const std::string& title, const std::string& unit, const std::vector<Row>& rows,
                 const std::string& baseline) {
  double base = 0;
  for (const Row& r : rows) {
    if (r.name == baseline && !r.seconds.empty()) base = r.median_rate();
  }
  std::printf("\n%s\n", title.c_str());
  std::printf("%-26s %14s %12s %10s  %s\n", "path", ("M " + unit + "/s").c_str(),
              ("ns/" + unit).c_str(), "vs base", "note");
  for (const Row& r : rows) {
    if (r.seconds.empty()) {
      std::printf("%-26s %14s %12s %10s  %s\n", r.name.c_str(), "-", "-", "-", r.note.c_str());
      continue;
    }
    const double rate = r.median_rate();
    std::printf("%-26s %14.1f %12.3f %9.2fx  %s\n", r.name.c_str(), rate / 1e6, 1e9 / rate,
                base > 0 ? rate / base : 0.0, r.note.c_str());
  }
  std::printf("(median of repetitions; 'vs base' is the ratio to %s)\n", baseline.c_str());
}

nlohmann::json rows_json(const std::vector<Row>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json j = {{"path", r.name}, {"items_per_rep", r.items}, {"seconds", r.seconds},
                        {"note", r.note}};
    if (!r.seconds.empty()) {
      j["median_seconds"] = median(r.seconds);
      j["median_rate_per_s"] = r.median_rate();
    } else {
      j["median_rate_per_s"] = nullptr;
    }
    if (r.extra.is_object()) j.update(r.extra);
    a.push_back(j);
  }
  return a;
}

double& min_rep_seconds() {
  static double seconds = 0.5;
  return seconds;
}

bool& min_rep_seconds_used() {
  static bool used = false;
  return used;
}

void write_json(const std::string& path, const nlohmann::json& report) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  nlohmann::json out = report;
  if (min_rep_seconds_used() && out.is_object() && !out.contains("min_rep_seconds")) {
    out["min_rep_seconds"] = min_rep_seconds();
  }
  write_text_file(path, out.dump(2) + "\n");
}

}  // namespace tandem::bench
