// Hardware counters around a piece of benchmark code: core cycles and retired instructions through
// perf_event_open (the counters `perf stat` reads), for this thread only, user space only. Where
// the kernel or the VM refuses them (perf_event_paranoid, no PMU passed through), only the
// time-stamp counter is read and `reason` says why; benches then report TSC ticks, not cycles.
#pragma once

#include <cstdint>
#include <string>

namespace tandem::bench {

struct CounterSample {
  bool have_pmu = false;     // cycles and instructions are real counters
  uint64_t cycles = 0;       // core cycles (PMU), else TSC ticks
  uint64_t instructions = 0; // 0 without the PMU
  double ipc() const { return have_pmu && cycles ? double(instructions) / double(cycles) : 0; }
};

class PerfCounters {
 public:
  PerfCounters();  // opens the counters; never throws
  ~PerfCounters();
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;

  bool have_pmu() const { return cycles_fd_ >= 0 && instr_fd_ >= 0; }
  const std::string& reason() const { return reason_; }  // why there is no PMU ("" when there is)

  // Counts around f().
  template <typename F>
  CounterSample measure(F&& f) {
    start();
    f();
    return stop();
  }

 private:
  void start();
  CounterSample stop();
  int cycles_fd_ = -1;
  int instr_fd_ = -1;
  uint64_t tsc0_ = 0;
  std::string reason_;
};

// One line for a report: "PMU: cycles and instructions (perf_event_open)" or the reason.
std::string counters_description(const PerfCounters& pc);

}  // namespace tandem::bench
