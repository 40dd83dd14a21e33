// What the cores themselves give when more of them work at once, apart from any memory, cache
// line or queue they share: the limit against which `bench cores` reads the pipeline's scaling.
// Each of N threads, pinned to CPUs 0..N-1 as the workers are, runs three loops in turn (two in
// registers, one over memory), all threads together:
//   chain   one dependent multiply-add chain (latency-bound): its rate follows the core's clock;
//   ports   eight independent chains (throughput-bound on the multiplier): its rate follows the
//           clock and the share of the core's execution ports the thread gets, so it halves where
//           two threads share a physical core (SMT) and the chain loop does not;
//   stream  sums of the thread's own 64 MiB buffer, read in order (beyond its core's caches, as a
//           worker's replay copy is): the memory bandwidth the thread gets while the others read
//           theirs, the resource all cores share.
// A VM without a PMU cannot read clocks, SMT siblings or memory traffic directly; these three
// rates tell them apart.
#pragma once

#include <vector>

namespace tandem::bench {

struct CoreProbe {
  int threads = 0;
  double chain_gops = 0;  // per thread, the mean over threads: G multiply-adds a second
  double ports_gops = 0;
  double stream_gbps = 0;  // per thread, GB a second
  double chain_min_gops = 0, ports_min_gops = 0, stream_min_gbps = 0;  // the slowest thread's
};

// Runs the probe on `threads` threads pinned to CPUs cpus[0..threads-1] (each loop `seconds` long).
CoreProbe probe_cores(const std::vector<int>& cpus, int threads, double seconds);

}  // namespace tandem::bench
