#include "sched/energy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tandem::sched {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system's temp dir, removed with the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "energy_test.XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories(fs::path(path_ + "/" + rel).parent_path());
    std::ofstream(path_ + "/" + rel) << text << "\n";
  }

 private:
  std::string path_;
};

// ---- RAPL -------------------------------------------------------------------------------------

// Two packages, one subzone (listed at the top level as in /sys/class/powercap, and nested), the
// control-type directory and a psys zone, none of which but the packages may be counted.
void write_powercap(const TempDir& d) {
  d.write("intel-rapl/enabled", "1");
  d.write("intel-rapl:0/name", "package-0");
  d.write("intel-rapl:0/energy_uj", "1000");
  d.write("intel-rapl:0/max_energy_range_uj", "1000000");
  d.write("intel-rapl:0/intel-rapl:0:0/energy_uj", "5");
  d.write("intel-rapl:0:0/name", "core");
  d.write("intel-rapl:0:0/energy_uj", "5");
  d.write("intel-rapl:0:0/max_energy_range_uj", "1000000");
  d.write("intel-rapl:1/name", "package-1");
  d.write("intel-rapl:1/energy_uj", "999000");
  d.write("intel-rapl:1/max_energy_range_uj", "1000000");
  d.write("intel-rapl:2/name", "psys");
  d.write("intel-rapl:2/energy_uj", "7");
  d.write("intel-rapl:2/max_energy_range_uj", "1000000");
}

TEST(RaplMeter, SumsPackagesIgnoresSubzonesAndUnwraps) {
  TempDir d;
  write_powercap(d);
  std::string why;
  auto m = open_rapl_meter(&why, d.path());
  ASSERT_NE(m, nullptr) << why;
  EXPECT_EQ(m->source(), "RAPL powercap (2 packages)");
  EXPECT_EQ(m->joules(), 0.0);

  d.write("intel-rapl:0/energy_uj", "3000");          // +2000 uJ
  d.write("intel-rapl:1/energy_uj", "1000");          // wrapped: +1000 to the max, +1000 after
  d.write("intel-rapl:0:0/energy_uj", "900000");      // subzone: already in package 0
  d.write("intel-rapl:0/intel-rapl:0:0/energy_uj", "900000");
  d.write("intel-rapl:2/energy_uj", "900000");        // psys: overlaps the packages
  EXPECT_NEAR(m->joules(), 0.004, 1e-12);

  d.write("intel-rapl:0/energy_uj", "1003000");  // +1 J
  EXPECT_NEAR(m->joules(), 1.004, 1e-12);
  EXPECT_NEAR(m->joules(), 1.004, 1e-12);  // no change, no energy
}

TEST(RaplMeter, KeepsItsTotalWhenACounterBecomesUnreadable) {
  TempDir d;
  write_powercap(d);
  std::string why;
  auto m = open_rapl_meter(&why, d.path());
  ASSERT_NE(m, nullptr) << why;
  d.write("intel-rapl:0/energy_uj", "501000");
  EXPECT_NEAR(m->joules(), 0.5, 1e-12);
  fs::remove(d.path() + "/intel-rapl:0/energy_uj");
  EXPECT_NEAR(m->joules(), 0.5, 1e-12);
}

TEST(RaplMeter, MissingRootNamesIt) {
  TempDir d;
  const std::string root = d.path() + "/powercap";
  std::string why;
  EXPECT_EQ(open_rapl_meter(&why, root), nullptr);
  EXPECT_EQ(why, "no " + root);
}

TEST(RaplMeter, RootWithoutPackagesSaysSo) {
  TempDir d;
  d.write("intel-rapl/enabled", "1");
  d.write("intel-rapl:0:0/energy_uj", "5");
  std::string why;
  EXPECT_EQ(open_rapl_meter(&why, d.path()), nullptr);
  EXPECT_EQ(why, "no intel-rapl:N packages in " + d.path());
}

TEST(RaplMeter, MissingCounterNamesTheFile) {
  TempDir d;
  write_powercap(d);
  fs::remove(d.path() + "/intel-rapl:1/energy_uj");
  std::string why;
  EXPECT_EQ(open_rapl_meter(&why, d.path()), nullptr);
  EXPECT_EQ(why, "intel-rapl:1/energy_uj: No such file or directory");
}

TEST(RaplMeter, UnreadableCounterSaysPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  TempDir d;
  write_powercap(d);
  ASSERT_EQ(::chmod((d.path() + "/intel-rapl:0/energy_uj").c_str(), 0), 0);
  std::string why;
  EXPECT_EQ(open_rapl_meter(&why, d.path()), nullptr);
  EXPECT_EQ(why, "intel-rapl:0/energy_uj: Permission denied");
}

// ---- NVML -------------------------------------------------------------------------------------

TEST(NvmlMeter, MissingLibraryNamesIt) {
  std::string why;
  EXPECT_EQ(open_nvml_meter("", &why, "libnvidia-ml-none.so"), nullptr);
  EXPECT_NE(why.find("libnvidia-ml-none.so"), std::string::npos) << why;
}

// A stand-in driver: plain functions over this state, reset by each test.
struct FakeNvml {
  int init_rc = 0, handle_rc = 0, energy_rc = 0, power_rc = 0;
  unsigned long long energy_mj = 0;
  unsigned power_mw = 0;
  int shutdowns = 0;
  std::string pci_asked;
};
FakeNvml fake;

detail::NvmlApi fake_api() {
  detail::NvmlApi api{};
  api.init = [] { return fake.init_rc; };
  api.shutdown = [] { return ++fake.shutdowns, 0; };
  api.error_string = [](int rc) -> const char* { return rc == 13 ? "Not Found" : "Unknown Error"; };
  api.handle_by_pci = [](const char* pci, void** dev) {
    fake.pci_asked = pci;
    *dev = &fake;
    return fake.handle_rc;
  };
  api.handle_by_index = [](unsigned, void** dev) { return *dev = &fake, fake.handle_rc; };
  api.total_energy = [](void*, unsigned long long* mj) { return *mj = fake.energy_mj, fake.energy_rc; };
  api.power_usage = [](void*, unsigned* mw) { return *mw = fake.power_mw, fake.power_rc; };
  api.name = [](void*, char* buf, unsigned n) { return std::snprintf(buf, n, "Fake GPU"), 0; };
  return api;
}

TEST(NvmlMeter, CountsFromTheTotalEnergyCounter) {
  fake = FakeNvml{};
  fake.energy_mj = 5000;
  std::string why;
  auto m = detail::open_nvml_meter(fake_api(), "", &why);
  ASSERT_NE(m, nullptr) << why;
  EXPECT_EQ(m->source(), "NVML total-energy counter (GPU 0: Fake GPU)");
  EXPECT_EQ(m->joules(), 0.0);
  fake.energy_mj = 7500;
  EXPECT_NEAR(m->joules(), 2.5, 1e-12);
  fake.energy_rc = 15;  // a failed read keeps the last value
  EXPECT_NEAR(m->joules(), 2.5, 1e-12);
  m.reset();
  EXPECT_EQ(fake.shutdowns, 1);
}

TEST(NvmlMeter, IntegratesPowerWhenTheCounterIsNotSupported) {
  fake = FakeNvml{};
  fake.energy_rc = 3;
  fake.power_mw = 100000;
  double now = 0;
  std::string why;
  auto m = detail::open_nvml_meter(fake_api(), "0000:19:00.0", &why, [&] { return now; });
  ASSERT_NE(m, nullptr) << why;
  EXPECT_EQ(fake.pci_asked, "0000:19:00.0");
  EXPECT_EQ(m->source(), "NVML power usage integrated between readings (GPU 0000:19:00.0; "
                         "no total-energy counter)");
  now = 2;
  fake.power_mw = 200000;
  EXPECT_NEAR(m->joules(), 300.0, 1e-9);  // (100 W + 200 W) / 2 x 2 s
  now = 3;
  EXPECT_NEAR(m->joules(), 500.0, 1e-9);
}

TEST(NvmlMeter, DeviceFailureShutsDownAndExplains) {
  fake = FakeNvml{};
  fake.handle_rc = 13;
  std::string why;
  EXPECT_EQ(detail::open_nvml_meter(fake_api(), "0000:99:00.0", &why), nullptr);
  EXPECT_EQ(why, "nvmlDeviceGetHandleByPciBusId_v2: Not Found (GPU 0000:99:00.0)");
  EXPECT_EQ(fake.shutdowns, 1);

  fake = FakeNvml{};
  fake.init_rc = 9;
  EXPECT_EQ(detail::open_nvml_meter(fake_api(), "", &why), nullptr);
  EXPECT_EQ(why, "nvmlInit_v2: Unknown Error");
  EXPECT_EQ(fake.shutdowns, 0);

  fake = FakeNvml{};
  fake.energy_rc = 3;
  fake.power_rc = 3;
  EXPECT_EQ(detail::open_nvml_meter(fake_api(), "", &why), nullptr);
  EXPECT_NE(why.find("nvmlDeviceGetPowerUsage"), std::string::npos) << why;
  EXPECT_EQ(fake.shutdowns, 1);
}

// ---- perf -------------------------------------------------------------------------------------

TEST(PerfEnergyMeter, NoPowerPmu) {
  TempDir d;
  d.write("software/type", "1");
  std::string why;
  EXPECT_EQ(open_perf_energy_meter(&why, d.path()), nullptr);
  EXPECT_EQ(why, "no \"power\" PMU in " + d.path());
}

TEST(PerfEnergyMeter, PowerPmuWithoutEnergyPkg) {
  TempDir d;
  d.write("power/type", "25");
  std::string why;
  EXPECT_EQ(open_perf_energy_meter(&why, d.path()), nullptr);
  EXPECT_EQ(why, "power PMU has no energy-pkg event (No such file or directory)");
}

TEST(PerfEnergyMeter, BadScale) {
  TempDir d;
  d.write("power/type", "25");
  d.write("power/events/energy-pkg", "event=0x02");
  d.write("power/events/energy-pkg.scale", "lots");
  std::string why;
  EXPECT_EQ(open_perf_energy_meter(&why, d.path()), nullptr);
  EXPECT_EQ(why, "power/events/energy-pkg.scale: not a number (\"lots\")");
}

TEST(PerfEnergyMeter, KernelRefusalIsReported) {
  // No PMU has this type, so the kernel refuses whatever the caller's privileges.
  TempDir d;
  d.write("power/type", "2147483000");
  d.write("power/events/energy-pkg", "event=0x02");
  d.write("power/events/energy-pkg.scale", "2.3283064365386962890625e-10");
  std::string why;
  EXPECT_EQ(open_perf_energy_meter(&why, d.path()), nullptr);
  EXPECT_EQ(why.rfind("perf_event_open: ", 0), 0u) << why;
}

// ---- CPU model and choice ---------------------------------------------------------------------

TEST(CpuModelMeter, IntegratesIdleAndActiveCores) {
  double now = 100, cores = 2;
  auto m = make_cpu_model_meter(CpuPowerModel{}, [&] { return cores; }, [&] { return now; });
  EXPECT_EQ(m->source(), "model: 30 W idle + 5.0 W x active cores");
  EXPECT_EQ(m->joules(), 0.0);
  now = 110;
  EXPECT_NEAR(m->joules(), 400.0, 1e-9);  // 40 W x 10 s
  now = 111;
  cores = 4;
  EXPECT_NEAR(m->joules(), 445.0, 1e-9);  // (40 W + 50 W) / 2 x 1 s
  now = 105;                              // a clock going back adds nothing
  EXPECT_NEAR(m->joules(), 445.0, 1e-9);
}

TEST(CpuModelMeter, RealClock) {
  auto m = make_cpu_model_meter(CpuPowerModel{10, 0}, [] { return 3.0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double j = m->joules();
  EXPECT_GE(j, 0.45);  // at least 10 W x 45 ms
  EXPECT_LE(j, 5.0);   // a loaded machine may add a few hundred ms, not seconds
}

TEST(OpenCpuMeter, FallsBackToTheModelAndSaysWhy) {
  TempDir d;
  const std::string powercap = d.path() + "/powercap", events = d.path() + "/devices";
  fs::create_directories(events);
  std::string tried;
  auto m = open_cpu_meter(CpuPowerModel{}, [] { return 1.0; }, &tried, powercap, events);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->source(), "model: 30 W idle + 5.0 W x active cores");
  EXPECT_EQ(tried, "RAPL: no " + powercap + "; perf: no \"power\" PMU in " + events);
}

TEST(OpenCpuMeter, PrefersRapl) {
  TempDir d;
  write_powercap(d);
  std::string tried = "stale";
  auto m = open_cpu_meter(CpuPowerModel{}, [] { return 1.0; }, &tried, d.path(), d.path());
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->source(), "RAPL powercap (2 packages)");
  EXPECT_EQ(tried, "");
}

TEST(OpenCpuMeter, ThisMachine) {
  std::string tried;
  auto m = open_cpu_meter(CpuPowerModel{}, [] { return 1.0; }, &tried);
  ASSERT_NE(m, nullptr);
  std::cout << "CPU energy: " << m->source() << (tried.empty() ? "" : "; tried " + tried) << "\n";
  if (m->source().rfind("RAPL", 0) == 0) {
    EXPECT_EQ(tried, "");
  } else {
    EXPECT_EQ(tried.rfind("RAPL: ", 0), 0u) << tried;
    if (m->source().rfind("model:", 0) == 0) {
      EXPECT_NE(tried.find("; perf: "), std::string::npos) << tried;
    }
  }
  EXPECT_GE(m->joules(), 0.0);
}

// ---- Sampler ----------------------------------------------------------------------------------

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Constant power on the real clock.
class WattMeter : public EnergyMeter {
 public:
  explicit WattMeter(double w) : w_(w), t0_(steady_s()) {}
  std::string source() const override { return "fake " + std::to_string(int(w_)) + " W"; }
  double joules() override { return w_ * (steady_s() - t0_); }

 private:
  double w_, t0_;
};

// 1 J per call; throws on every third call when asked to.
class CountingMeter : public EnergyMeter {
 public:
  explicit CountingMeter(bool throws = false) : throws_(throws) {}
  std::string source() const override { return throws_ ? "fake throwing" : "fake counting"; }
  double joules() override {
    if (throws_ && ++calls_ % 3 == 0) throw std::runtime_error("flaky meter");
    return count_++;
  }

 private:
  bool throws_;
  int calls_ = 0;
  double count_ = 0;
};

std::vector<std::unique_ptr<EnergyMeter>> meters(std::unique_ptr<EnergyMeter> a,
                                                 std::unique_ptr<EnergyMeter> b = nullptr) {
  std::vector<std::unique_ptr<EnergyMeter>> v;
  v.push_back(std::move(a));
  if (b) v.push_back(std::move(b));
  return v;
}

TEST(EnergySampler, IncreasingJoulesAndSensibleWatts) {
  EnergySampler s(meters(std::make_unique<WattMeter>(50), std::make_unique<CountingMeter>(true)),
                  std::chrono::milliseconds(20));
  ASSERT_EQ(s.meters(), 2u);
  EXPECT_EQ(s.source(0), "fake 50 W");
  EXPECT_EQ(s.source(1), "fake throwing");
  s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  s.stop();
  s.stop();  // a second stop is harmless

  const auto series = s.series();
  ASSERT_GE(series.size(), 5u);
  EXPECT_EQ(series.front().t_s, 0.0);
  std::vector<double> watts;
  for (size_t k = 1; k < series.size(); ++k) {
    EXPECT_GT(series[k].t_s, series[k - 1].t_s);
    EXPECT_GE(series[k].joules[0], series[k - 1].joules[0]);
    EXPECT_GE(series[k].joules[1], series[k - 1].joules[1]);  // despite the throws
    watts.push_back(series[k].watts[0]);
  }
  std::sort(watts.begin(), watts.end());
  EXPECT_NEAR(watts[watts.size() / 2], 50.0, 10.0);  // the median: one late sample may skew one
  const auto last = s.latest();
  EXPECT_EQ(last.t_s, series.back().t_s);
  EXPECT_NEAR(last.joules[0] / last.t_s, 50.0, 10.0);
  EXPECT_EQ(s.joules(0), last.joules[0]);
  EXPECT_GT(s.joules(1), 0.0);
}

TEST(EnergySampler, StopTakesALastSampleWithoutWaitingAPeriod) {
  EnergySampler s(meters(std::make_unique<WattMeter>(10)), std::chrono::seconds(10));
  EXPECT_EQ(s.latest().joules.size(), 1u);  // zeros before start
  s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const double t0 = steady_s();
  s.stop();
  EXPECT_LT(steady_s() - t0, 1.0);
  const auto series = s.series();
  ASSERT_EQ(series.size(), 2u);
  EXPECT_GE(series[1].t_s, 0.025);
  EXPECT_NEAR(series[1].watts[0], 10.0, 2.0);
}

TEST(EnergySampler, BoundedSeriesStaysEvenlySpaced) {
  EnergySampler s(meters(std::make_unique<CountingMeter>()), std::chrono::milliseconds(1), 8);
  s.start();
  while (s.latest().joules[0] < 60) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  s.stop();
  const auto series = s.series();
  ASSERT_LE(series.size(), 8u);
  ASSERT_GE(series.size(), 4u);
  // The counting meter's joules number the samples: kept ones are a fixed stride apart.
  const double stride = series[1].joules[0] - series[0].joules[0];
  EXPECT_GE(stride, 8.0);
  for (size_t k = 1; k + 1 < series.size(); ++k) {
    EXPECT_EQ(series[k].joules[0] - series[k - 1].joules[0], stride) << k;
  }
  EXPECT_EQ(series.back().joules[0], s.joules(0));
}

TEST(EnergySampler, RestartsAndDestructsWhileRunning) {
  EnergySampler s(meters(std::make_unique<CountingMeter>()), std::chrono::milliseconds(5));
  s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  s.stop();
  s.start();  // a new series, counted from this start
  EXPECT_EQ(s.series().size(), 1u);
  EXPECT_EQ(s.joules(0), 0.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // The destructor stops the thread.
}

}  // namespace
}  // namespace tandem::sched
