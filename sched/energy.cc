#include "sched/energy.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tandem::sched {
namespace {

constexpr int kNvmlNotSupported = 3;

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

NowFn or_steady(NowFn f) { return f ? std::move(f) : NowFn(steady_seconds); }

void set(std::string* out, std::string text) {
  if (out) *out = std::move(text);
}

std::nullptr_t fail(std::string* why, std::string text) {
  set(why, std::move(text));
  return nullptr;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Reads a one-line sysfs file. *err gets open's errno text: "Permission denied" is what recent
// kernels answer for RAPL counters without root.
bool read_line(const std::string& path, std::string* out, std::string* err) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) {
    *err = std::strerror(errno);
    return false;
  }
  char buf[256] = {};
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr || !std::ferror(f);
  if (!ok) *err = std::strerror(errno);
  std::fclose(f);
  *out = trim(buf);
  return ok;
}

bool parse_u64(const std::string& s, uint64_t* v, int base = 10) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(s.c_str(), &end, base);
  if (s.empty() || s[0] == '-' || errno != 0 || *end != '\0') return false;
  *v = x;
  return true;
}

// Reads a whole-number sysfs file; on failure *why is "<label>: <reason>".
bool read_u64(const std::string& path, const std::string& label, uint64_t* v, std::string* why) {
  std::string text, err;
  if (!read_line(path, &text, &err)) {
    *why = label + ": " + err;
    return false;
  }
  const bool ok = parse_u64(text, v);
  if (!ok) *why = label + ": not a number (\"" + text + "\")";
  return ok;
}

// ---- RAPL -------------------------------------------------------------------------------------

struct RaplZone {
  std::string energy_path;
  uint64_t max_uj = 0, last_uj = 0;
};

class RaplMeter final : public EnergyMeter {
 public:
  explicit RaplMeter(std::vector<RaplZone> zones) : zones_(std::move(zones)) {}
  std::string source() const override {
    return "RAPL powercap (" + std::to_string(zones_.size()) +
           (zones_.size() == 1 ? " package)" : " packages)");
  }
  double joules() override {
    for (RaplZone& z : zones_) {
      std::string text, err;
      uint64_t now = 0;
      // A failed read keeps the total where it was; the next good read covers the gap.
      if (!read_line(z.energy_path, &text, &err) || !parse_u64(text, &now)) continue;
      // The counter runs from 0 to max_energy_range_uj and starts over.
      if (now >= z.last_uj) {
        total_uj_ += now - z.last_uj;
      } else {
        total_uj_ += (z.last_uj <= z.max_uj ? z.max_uj - z.last_uj : 0) + now;
      }
      z.last_uj = now;
    }
    return static_cast<double>(total_uj_) * 1e-6;
  }

 private:
  std::vector<RaplZone> zones_;
  uint64_t total_uj_ = 0;
};

// ---- perf "power" PMU -------------------------------------------------------------------------

class PerfMeter final : public EnergyMeter {
 public:
  PerfMeter(std::vector<int> fds, std::vector<uint64_t> start, double scale)
      : fds_(std::move(fds)), start_(start), last_(std::move(start)), scale_(scale) {}
  ~PerfMeter() override {
    for (int fd : fds_) ::close(fd);
  }
  std::string source() const override {
    const size_t n = fds_.size();
    return "perf power/energy-pkg" + (n == 1 ? "" : " (" + std::to_string(n) + " packages)");
  }
  double joules() override {
    double j = 0;
    for (size_t i = 0; i < fds_.size(); ++i) {
      uint64_t v = 0;
      if (::read(fds_[i], &v, sizeof v) == ssize_t(sizeof v) && v >= last_[i]) last_[i] = v;
      j += static_cast<double>(last_[i] - start_[i]) * scale_;
    }
    return j;
  }

 private:
  std::vector<int> fds_;
  std::vector<uint64_t> start_, last_;
  double scale_;
};

// "event=0x02" -> perf_event_attr.config. The power PMU's only format term is event (config:0-7).
bool parse_event_config(const std::string& spec, uint64_t* config, std::string* why) {
  if (spec.compare(0, 6, "event=") != 0 || !parse_u64(spec.substr(6), config, 0)) {
    *why = "power/events/energy-pkg: unsupported \"" + spec + "\" (expected event=N)";
    return false;
  }
  return true;
}

// "0,28" (the power PMU's cpumask: one CPU per package) -> {0, 28}.
std::vector<int> parse_cpu_list(const std::string& s) {
  std::vector<int> cpus;
  for (const char* p = s.c_str(); *p;) {
    char* end = nullptr;
    const long cpu = std::strtol(p, &end, 10);
    if (end == p || cpu < 0) return {};
    if (*end != ',' && *end != '\0') return {};  // a range or junk: the caller uses CPU 0
    cpus.push_back(static_cast<int>(cpu));
    p = *end ? end + 1 : end;
  }
  return cpus;
}

std::string paranoid_level() {
  std::string text, err;
  return read_line("/proc/sys/kernel/perf_event_paranoid", &text, &err) ? text : "unknown";
}

// ---- Power readings integrated over time (the model, and NVML without an energy counter) -------

// The power over an interval is taken as the mean of its two ends, since it may have changed
// anywhere in between; a clock that goes back adds nothing.
class PowerIntegral {
 public:
  PowerIntegral(NowFn now, double watts) : now_(std::move(now)), t_(now_()), w_(watts) {}
  double add(double watts) {
    const double t = now_();
    if (t > t_) j_ += 0.5 * (watts + w_) * (t - t_);
    t_ = std::max(t, t_);
    w_ = watts;
    return j_;
  }
  double last_watts() const { return w_; }

 private:
  NowFn now_;
  double t_, w_, j_ = 0;
};

class ModelMeter final : public EnergyMeter {
 public:
  ModelMeter(CpuPowerModel m, std::function<double()> active, NowFn now)
      : m_(m), active_(std::move(active)), integral_(std::move(now), power()) {}
  std::string source() const override {
    char buf[96];
    std::snprintf(buf, sizeof buf, "model: %g W idle + %.1f W x active cores", m_.idle_w,
                  m_.core_w);
    return buf;
  }
  double joules() override { return integral_.add(power()); }

 private:
  double power() const {
    const double n = active_ ? active_() : 0.0;
    return m_.idle_w + m_.core_w * (std::isfinite(n) ? std::max(0.0, n) : 0.0);
  }
  CpuPowerModel m_;
  std::function<double()> active_;
  PowerIntegral integral_;
};

// ---- NVML -------------------------------------------------------------------------------------

class NvmlMeter final : public EnergyMeter {
 public:
  // With the counter, start_mj is its value at open; without, watts is the power at open.
  NvmlMeter(const detail::NvmlApi& api, void* dev, bool counter, std::string source,
            unsigned long long start_mj, double watts, NowFn now)
      : api_(api), dev_(dev), counter_(counter), source_(std::move(source)), start_mj_(start_mj),
        last_mj_(start_mj), power_(std::move(now), watts) {}
  ~NvmlMeter() override { api_.shutdown(); }
  std::string source() const override { return source_; }
  double joules() override {
    if (counter_) {
      unsigned long long mj = 0;
      if (api_.total_energy(dev_, &mj) == 0 && mj >= last_mj_) last_mj_ = mj;
      return static_cast<double>(last_mj_ - start_mj_) * 1e-3;
    }
    unsigned mw = 0;
    // Without a reading, the last known power stands for the whole interval.
    return power_.add(api_.power_usage(dev_, &mw) == 0 ? mw * 1e-3 : power_.last_watts());
  }

 private:
  detail::NvmlApi api_;
  void* dev_;
  bool counter_;
  std::string source_;
  unsigned long long start_mj_, last_mj_;
  PowerIntegral power_;
};

}  // namespace

namespace detail {

std::unique_ptr<EnergyMeter> open_nvml_meter(const NvmlApi& api, const std::string& pci_bus_id,
                                             std::string* why, NowFn now_s) {
  auto message = [&](const char* fn, int rc) {
    const char* text = api.error_string ? api.error_string(rc) : nullptr;
    return std::string(fn) + ": " + (text ? text : "error " + std::to_string(rc));
  };
  int rc = api.init();
  if (rc != 0) return fail(why, message("nvmlInit_v2", rc));
  void* dev = nullptr;
  std::string gpu = "GPU " + (pci_bus_id.empty() ? std::string("0") : pci_bus_id);
  rc = pci_bus_id.empty() ? api.handle_by_index(0, &dev)
                          : api.handle_by_pci(pci_bus_id.c_str(), &dev);
  if (rc != 0) {
    api.shutdown();
    return fail(why, message(pci_bus_id.empty() ? "nvmlDeviceGetHandleByIndex_v2(0)"
                                                : "nvmlDeviceGetHandleByPciBusId_v2",
                             rc) + " (" + gpu + ")");
  }
  char name[96] = {};
  if (pci_bus_id.empty() && api.name && api.name(dev, name, sizeof name) == 0 && name[0]) {
    gpu += std::string(": ") + name;
  }
  unsigned long long mj = 0;
  rc = api.total_energy(dev, &mj);
  if (rc == 0) {
    return std::make_unique<NvmlMeter>(api, dev, true, "NVML total-energy counter (" + gpu + ")",
                                       mj, 0, or_steady(std::move(now_s)));
  }
  // Boards before Volta have no energy counter; their power reading, integrated, is the next best.
  unsigned mw = 0;
  const int rc_power = rc == kNvmlNotSupported ? api.power_usage(dev, &mw) : rc;
  if (rc_power != 0) {
    std::string text = message("nvmlDeviceGetTotalEnergyConsumption", rc);
    if (rc == kNvmlNotSupported) text += "; " + message("nvmlDeviceGetPowerUsage", rc_power);
    api.shutdown();
    return fail(why, text + " (" + gpu + ")");
  }
  return std::make_unique<NvmlMeter>(
      api, dev, false,
      "NVML power usage integrated between readings (" + gpu + "; no total-energy counter)", 0,
      mw * 1e-3, or_steady(std::move(now_s)));
}

}  // namespace detail

std::unique_ptr<EnergyMeter> open_nvml_meter(const std::string& pci_bus_id, std::string* why,
                                             const char* lib, NowFn now_s) {
  // The handle is never closed once NVML could have been initialized: NVML does not document
  // unloading as safe, and dlopen reuses the mapping when the meter is opened again.
  void* h = ::dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    std::string text = e ? e : "cannot load";
    if (text.find(lib) == std::string::npos) text = std::string(lib) + ": " + text;
    return fail(why, text);
  }
  std::string missing;
  auto sym = [&](const char* s) {
    void* p = ::dlsym(h, s);
    if (!p && missing.empty()) missing = s;
    return p;
  };
  detail::NvmlApi api{};
  api.init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
  api.shutdown = reinterpret_cast<int (*)()>(sym("nvmlShutdown"));
  api.error_string = reinterpret_cast<const char* (*)(int)>(sym("nvmlErrorString"));
  api.handle_by_pci =
      reinterpret_cast<int (*)(const char*, void**)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  api.handle_by_index =
      reinterpret_cast<int (*)(unsigned, void**)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  api.total_energy = reinterpret_cast<int (*)(void*, unsigned long long*)>(
      sym("nvmlDeviceGetTotalEnergyConsumption"));
  api.power_usage = reinterpret_cast<int (*)(void*, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
  if (!missing.empty()) {
    ::dlclose(h);
    return fail(why, std::string(lib) + ": no symbol " + missing);
  }
  api.name = reinterpret_cast<int (*)(void*, char*, unsigned)>(::dlsym(h, "nvmlDeviceGetName"));
  return detail::open_nvml_meter(api, pci_bus_id, why, std::move(now_s));
}

std::unique_ptr<EnergyMeter> open_rapl_meter(std::string* why, const std::string& root) {
  DIR* dir = ::opendir(root.c_str());
  if (!dir) return fail(why, errno == ENOENT ? "no " + root : root + ": " + std::strerror(errno));
  // Packages are "intel-rapl:N"; their subzones ("intel-rapl:N:M") are already in their total.
  std::vector<std::pair<unsigned long, std::string>> packages;
  while (const dirent* e = ::readdir(dir)) {
    unsigned long index = 0;
    int end = 0;
    if (std::sscanf(e->d_name, "intel-rapl:%lu%n", &index, &end) == 1 && e->d_name[end] == '\0') {
      packages.emplace_back(index, e->d_name);
    }
  }
  ::closedir(dir);
  std::sort(packages.begin(), packages.end());

  std::vector<RaplZone> zones;
  for (const auto& [index, name] : packages) {
    const std::string zone = root + "/" + name;
    std::string text, err;
    // psys (platform) covers the packages and more; adding it would count them twice.
    if (read_line(zone + "/name", &text, &err) && text == "psys") continue;
    RaplZone z{zone + "/energy_uj"};
    if (!read_u64(z.energy_path, name + "/energy_uj", &z.last_uj, &text) ||
        !read_u64(zone + "/max_energy_range_uj", name + "/max_energy_range_uj", &z.max_uj, &text)) {
      return fail(why, text);
    }
    zones.push_back(std::move(z));
  }
  if (zones.empty()) return fail(why, "no intel-rapl:N packages in " + root);
  return std::make_unique<RaplMeter>(std::move(zones));
}

std::unique_ptr<EnergyMeter> open_perf_energy_meter(std::string* why, const std::string& root) {
  const std::string pmu = root + "/power";
  struct stat st {};
  if (::stat(pmu.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return fail(why, "no \"power\" PMU in " + root);
  }
  uint64_t type = 0, config = 0;
  std::string text, err, scale_text;
  if (!read_u64(pmu + "/type", "power/type", &type, &text)) return fail(why, text);
  if (!read_line(pmu + "/events/energy-pkg", &text, &err)) {
    return fail(why, "power PMU has no energy-pkg event (" + err + ")");
  }
  if (!parse_event_config(text, &config, &text)) return fail(why, text);
  if (!read_line(pmu + "/events/energy-pkg.scale", &scale_text, &err)) {
    return fail(why, "power/events/energy-pkg.scale: " + err);
  }
  char* end = nullptr;
  const double scale = std::strtod(scale_text.c_str(), &end);
  if (*end != '\0' || !(scale > 0) || !std::isfinite(scale)) {
    return fail(why, "power/events/energy-pkg.scale: not a number (\"" + scale_text + "\")");
  }
  std::vector<int> cpus;
  if (read_line(pmu + "/cpumask", &text, &err)) cpus = parse_cpu_list(text);
  if (cpus.empty()) cpus.push_back(0);

  std::vector<int> fds;
  std::vector<uint64_t> start;
  for (int cpu : cpus) {
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = static_cast<uint32_t>(type);
    attr.config = config;
    const int fd = static_cast<int>(
        ::syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
    const int saved = errno;
    uint64_t v = 0;
    if (fd < 0 || ::read(fd, &v, sizeof v) != ssize_t(sizeof v)) {
      std::string msg = fd < 0 ? "perf_event_open: " + std::string(std::strerror(saved))
                               : "perf power/energy-pkg: unreadable counter";
      if (fd < 0 && (saved == EACCES || saved == EPERM)) {
        msg += " (perf_event_paranoid " + paranoid_level() + ")";
      }
      if (fd >= 0) ::close(fd);
      for (int f : fds) ::close(f);
      return fail(why, msg + (cpus.size() > 1 ? " (cpu " + std::to_string(cpu) + ")" : ""));
    }
    fds.push_back(fd);
    start.push_back(v);
  }
  return std::make_unique<PerfMeter>(std::move(fds), std::move(start), scale);
}

std::unique_ptr<EnergyMeter> make_cpu_model_meter(CpuPowerModel m,
                                                  std::function<double()> active_cores,
                                                  NowFn now_s) {
  return std::make_unique<ModelMeter>(m, std::move(active_cores), or_steady(std::move(now_s)));
}

std::unique_ptr<EnergyMeter> open_cpu_meter(CpuPowerModel m, std::function<double()> active_cores,
                                            std::string* tried, const std::string& powercap_root,
                                            const std::string& perf_root, NowFn now_s) {
  std::string rapl_why, perf_why;
  set(tried, "");
  if (auto meter = open_rapl_meter(&rapl_why, powercap_root)) return meter;
  if (auto meter = open_perf_energy_meter(&perf_why, perf_root)) {
    set(tried, "RAPL: " + rapl_why);
    return meter;
  }
  set(tried, "RAPL: " + rapl_why + "; perf: " + perf_why);
  return make_cpu_model_meter(m, std::move(active_cores), std::move(now_s));
}

// ---- Sampler ----------------------------------------------------------------------------------

EnergySampler::EnergySampler(std::vector<std::unique_ptr<EnergyMeter>> meters,
                             std::chrono::milliseconds period, size_t max_points)
    : meters_(std::move(meters)),
      period_(std::max(period, std::chrono::milliseconds(1))),
      max_points_(std::max<size_t>(max_points, 2)) {
  for (const auto& m : meters_) {
    try {
      sources_.push_back(m ? m->source() : "no meter");
    } catch (...) {
      sources_.push_back("unknown (source() failed)");
    }
  }
  latest_.joules.assign(meters_.size(), 0);
  latest_.watts.assign(meters_.size(), 0);
}

EnergySampler::~EnergySampler() { stop(); }

// A meter that fails or throws keeps its last reading, so one bad source never stops the others.
static double read_meter(EnergyMeter* m, double fallback) {
  if (!m) return fallback;
  try {
    const double j = m->joules();
    return std::isfinite(j) && j >= fallback ? j : fallback;
  } catch (...) {
    return fallback;
  }
}

void EnergySampler::start() {
  if (thread_.joinable()) return;
  const size_t n = meters_.size();
  last_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) last_[i] = read_meter(meters_[i].get(), 0);
  base_ = last_;
  t0_ = std::chrono::steady_clock::now();
  taken_ = 1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
    latest_ = Point{0, std::vector<double>(n, 0), std::vector<double>(n, 0)};
    series_.assign(1, latest_);
    stride_ = 1;
  }
  thread_ = std::thread(&EnergySampler::run, this);
}

void EnergySampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EnergySampler::run() {
  try {
    auto next = t0_ + period_;
    for (;;) {
      bool last;
      {
        std::unique_lock<std::mutex> lock(mu_);
        last = cv_.wait_until(lock, next, [this] { return stopping_; });
      }
      sample(last);
      if (last) return;
      next += period_;
      // After a stall (suspend, an overloaded machine), resume the cadence instead of catching up
      // with a burst of samples a few microseconds apart.
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now + period_;
    }
  } catch (...) {
    // Only allocation can throw here; the series simply ends.
  }
}

void EnergySampler::sample(bool last) {
  const size_t n = meters_.size();
  Point p;
  p.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  p.joules.resize(n);
  p.watts.resize(n);
  for (size_t i = 0; i < n; ++i) {
    last_[i] = read_meter(meters_[i].get(), last_[i]);
    p.joules[i] = last_[i] - base_[i];
  }
  ++taken_;
  std::lock_guard<std::mutex> lock(mu_);
  const double dt = p.t_s - latest_.t_s;
  for (size_t i = 0; i < n; ++i) {
    p.watts[i] = dt > 0 ? (p.joules[i] - latest_.joules[i]) / dt : latest_.watts[i];
  }
  latest_ = p;
  const size_t index = taken_ - 1;
  if (index % stride_ != 0 && !last) return;
  if (series_.size() >= max_points_) {
    // Keep the points at even positions: the series stays evenly spaced at twice the stride.
    for (size_t k = 2; k < series_.size(); k += 2) series_[k / 2] = std::move(series_[k]);
    series_.resize((series_.size() + 1) / 2);
    stride_ *= 2;
    if (index % stride_ != 0 && !last) return;
  }
  series_.push_back(std::move(p));
}

EnergySampler::Point EnergySampler::latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

std::vector<EnergySampler::Point> EnergySampler::series() const {
  std::lock_guard<std::mutex> lock(mu_);
  return series_;
}

double EnergySampler::joules(size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_.joules.at(i);
}

}  // namespace tandem::sched
