#include "bench/perf_counters.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cerrno>
#include <cstring>

namespace tandem::bench {

namespace {

int open_counter(uint64_t config, int group_fd, std::string* why) {
  perf_event_attr a{};
  a.size = sizeof(a);
  a.type = PERF_TYPE_HARDWARE;
  a.config = config;
  a.disabled = group_fd < 0 ? 1 : 0;  // the group leader starts disabled; members follow it
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &a, 0 /* this thread */, -1 /* any CPU */, group_fd, 0);
  if (fd < 0 && why->empty()) {
    *why = std::string("perf_event_open: ") + std::strerror(errno) +
           (errno == EACCES || errno == EPERM ? " (kernel.perf_event_paranoid)" : "") +
           (errno == ENOENT || errno == EOPNOTSUPP ? " (no hardware counters, e.g. a VM without a virtual PMU)" : "");
  }
  return static_cast<int>(fd);
}

uint64_t read_counter(int fd) {
  uint64_t v = 0;
  return read(fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v) ? v : 0;
}

}  // namespace

PerfCounters::PerfCounters() {
  cycles_fd_ = open_counter(PERF_COUNT_HW_CPU_CYCLES, -1, &reason_);
  if (cycles_fd_ >= 0) instr_fd_ = open_counter(PERF_COUNT_HW_INSTRUCTIONS, cycles_fd_, &reason_);
  if (cycles_fd_ >= 0 && instr_fd_ < 0) {
    close(cycles_fd_);
    cycles_fd_ = -1;
  }
}

PerfCounters::~PerfCounters() {
  if (instr_fd_ >= 0) close(instr_fd_);
  if (cycles_fd_ >= 0) close(cycles_fd_);
}

void PerfCounters::start() {
  if (have_pmu()) {
    ioctl(cycles_fd_, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    ioctl(cycles_fd_, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
  }
  tsc0_ = __rdtsc();
}

CounterSample PerfCounters::stop() {
  CounterSample s;
  const uint64_t tsc1 = __rdtsc();
  if (have_pmu()) {
    ioctl(cycles_fd_, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
    s.have_pmu = true;
    s.cycles = read_counter(cycles_fd_);
    s.instructions = read_counter(instr_fd_);
    if (s.cycles == 0) s.have_pmu = false;  // opened but not counting (some hypervisors)
  }
  if (!s.have_pmu) {
    s.cycles = tsc1 - tsc0_;
    s.instructions = 0;
  }
  return s;
}

std::string counters_description(const PerfCounters& pc) {
  return pc.have_pmu() ? "PMU: core cycles and instructions, user space, this thread (perf_event_open)"
                       : "no PMU (" + pc.reason() + "): TSC ticks instead of cycles, no instruction counts";
}

}  // namespace tandem::bench
