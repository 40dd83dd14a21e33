// Energy figures for the adaptive CPU+GPU scheduler: how many joules the GPU and the CPU spent
// while a configuration ran. Each figure comes from the best source readable on this machine, and
// every meter names its source, so a report never passes a model off as a measurement.
//
// GPU: NVML's total-energy counter (millijoules since the driver loaded), loaded with dlopen so
// the framework builds and runs without the NVIDIA driver; on boards without that counter, NVML's
// instantaneous power integrated between readings.
// CPU: RAPL through powercap (/sys/class/powercap/intel-rapl:N), else perf's "power" PMU, else a
// model (idle watts plus watts per active core) integrated over time.
//
// Meters are read off the data path, by one EnergySampler thread at about 10 Hz.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem::sched {

// Seconds on some monotonic clock; empty means std::chrono::steady_clock. Injectable so tests can
// check time integration without sleeping.
using NowFn = std::function<double()>;

// One source of energy. joules() is monotonic (counter wraps are handled) and is called from one
// thread at a time.
class EnergyMeter {
 public:
  virtual ~EnergyMeter() = default;
  // What the figure comes from, e.g. "RAPL powercap (2 packages)" or "model: 30 W idle + ...".
  virtual std::string source() const = 0;
  // Joules since the meter was opened.
  virtual double joules() = 0;
};

// GPU energy through NVML (dlopen'd `lib`): the device with `pci_bus_id`, or device 0 when it is
// empty. Returns nullptr and sets *why (if non-null) when the library, a symbol, the device or both
// energy readings are unavailable.
std::unique_ptr<EnergyMeter> open_nvml_meter(const std::string& pci_bus_id, std::string* why,
                                             const char* lib = "libnvidia-ml.so.1",
                                             NowFn now_s = {});

namespace detail {
// The NVML entry points the meter uses (nvmlReturn_t is an int, 0 = success; nvmlDevice_t an
// opaque pointer), so tests can stand in for the driver. name may be null.
struct NvmlApi {
  int (*init)();                                              // nvmlInit_v2
  int (*shutdown)();                                          // nvmlShutdown
  const char* (*error_string)(int);                           // nvmlErrorString
  int (*handle_by_pci)(const char*, void**);                  // nvmlDeviceGetHandleByPciBusId_v2
  int (*handle_by_index)(unsigned, void**);                   // nvmlDeviceGetHandleByIndex_v2
  int (*total_energy)(void*, unsigned long long*);            // nvmlDeviceGetTotalEnergyConsumption
  int (*power_usage)(void*, unsigned*);                       // nvmlDeviceGetPowerUsage
  int (*name)(void*, char*, unsigned);                        // nvmlDeviceGetName
};
std::unique_ptr<EnergyMeter> open_nvml_meter(const NvmlApi& api, const std::string& pci_bus_id,
                                             std::string* why, NowFn now_s = {});
}  // namespace detail

// CPU package energy from RAPL: the energy_uj of every top-level <root>/intel-rapl:N zone (not the
// intel-rapl:N:M subzones, which the package already counts, and not a "psys" zone, which overlaps
// the packages), each unwrapped at its max_energy_range_uj, summed. nullptr + *why when the root is
// missing, a counter is unreadable ("intel-rapl:0/energy_uj: Permission denied": recent kernels
// keep it root-only) or there are no packages.
std::unique_ptr<EnergyMeter> open_rapl_meter(std::string* why,
                                             const std::string& root = "/sys/class/powercap");

// CPU package energy from perf_event_open on the "power" PMU (<root>/power: type,
// events/energy-pkg, events/energy-pkg.scale), counting system-wide on each CPU of the PMU's
// cpumask (one per package; CPU 0 when there is no cpumask). nullptr + *why ("no \"power\" PMU in ...",
// "perf_event_open: Permission denied (perf_event_paranoid 2)").
std::unique_ptr<EnergyMeter> open_perf_energy_meter(
    std::string* why, const std::string& root = "/sys/bus/event_source/devices");

// The CPU model used when no counter is readable: idle_w + core_w x active cores.
struct CpuPowerModel {
  double idle_w = 30;
  double core_w = 5;
};

// Integrates the model over time. active_cores() is called when the meter is made and at each
// joules() call; the power over an interval is the average of the power at its two ends, since the
// count may have changed anywhere in between.
std::unique_ptr<EnergyMeter> make_cpu_model_meter(CpuPowerModel m,
                                                  std::function<double()> active_cores,
                                                  NowFn now_s = {});

// The CPU meter to use: RAPL, else perf, else the model. *tried (if non-null) says why each source
// before the one used was not used, e.g. "RAPL: no /sys/class/powercap; perf: no \"power\" PMU in
// /sys/bus/event_source/devices"; empty when RAPL was used.
std::unique_ptr<EnergyMeter> open_cpu_meter(
    CpuPowerModel m, std::function<double()> active_cores, std::string* tried,
    const std::string& powercap_root = "/sys/class/powercap",
    const std::string& perf_root = "/sys/bus/event_source/devices", NowFn now_s = {});

// One thread sampling a set of meters every `period` (NVML refreshes its counter every 20-100 ms,
// so 100 ms by default). Joules are counted from start(); a meter that throws keeps its last value.
class EnergySampler {
 public:
  struct Point {
    double t_s = 0;              // since start()
    std::vector<double> joules;  // per meter, since start()
    std::vector<double> watts;   // per meter, over the interval since the previous sample
  };

  // max_points bounds series(): when full, every other point is dropped and from then on only
  // every second (fourth, ...) sample is kept, so the series stays evenly spaced.
  explicit EnergySampler(std::vector<std::unique_ptr<EnergyMeter>> meters,
                         std::chrono::milliseconds period = std::chrono::milliseconds(100),
                         size_t max_points = 100000);
  ~EnergySampler();  // stops
  EnergySampler(const EnergySampler&) = delete;
  EnergySampler& operator=(const EnergySampler&) = delete;

  // Takes a first sample (t 0, joules 0) and starts the thread; a no-op while running. Starting
  // again after stop() begins a new series.
  void start();
  // Takes a last sample and joins the thread; a no-op when not running.
  void stop();

  Point latest() const;               // zeros before the first sample
  std::vector<Point> series() const;  // the samples kept since start()
  size_t meters() const { return meters_.size(); }
  std::string source(size_t i) const { return sources_.at(i); }
  double joules(size_t i) const;  // meter i's total since start(), at the last sample

 private:
  void run();
  void sample(bool last);

  std::vector<std::unique_ptr<EnergyMeter>> meters_;  // read by the sampler thread only
  std::vector<std::string> sources_;
  const std::chrono::milliseconds period_;
  const size_t max_points_;

  // Sampler thread's own state.
  std::chrono::steady_clock::time_point t0_;
  std::vector<double> base_;  // each meter's reading at start()
  std::vector<double> last_;  // each meter's last good reading
  size_t taken_ = 0;          // samples taken since start()

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  Point latest_;
  std::vector<Point> series_;
  size_t stride_ = 1;  // keep every stride_-th sample in series_

  std::thread thread_;
};

}  // namespace tandem::sched
