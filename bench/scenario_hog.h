// The "system change" of the scheduler's scenarios (Koromilas et al. section 5: throttling,
// contention): something else takes CPU cores or the GPU for a while.
//   CpuHog: one thread per core, pinned there, spinning; the CPU group's threads on those cores
//           then get about half of them from the kernel's scheduler.
//   GpuHog: another process (this binary's hidden `hog-gpu` command) keeping the GPU busy with
//           kernels of a few milliseconds each; the GPU time-slices between it and the run's
//           persistent kernel, as it would for any other tenant.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tandem::bench {

class CpuHog {
 public:
  ~CpuHog() { stop(); }
  void start(const std::vector<int>& cores);
  void stop();
  bool running() const { return !threads_.empty(); }
  // Cores a thread could not be pinned to (the hog then took no core of its own there).
  int unpinned() const { return unpinned_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> unpinned_{0};
  std::vector<std::thread> threads_;
};

class GpuHog {
 public:
  ~GpuHog() { reap(); }
  // Starts the hog process for at most `max_seconds` (it ends by itself then, should this process
  // die first). Throws std::runtime_error when it cannot start.
  void start(double max_seconds);
  // Asks it to stop (SIGTERM) without waiting: safe on the scheduler's thread. Notes whether it
  // had ended already.
  void signal_stop();
  // Waits for it; "" when it ran until told to stop and exited cleanly, else what went wrong.
  std::string reap();
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
  bool ended_early_ = false;
  bool signalled_ = false;
};

// The hidden command's work: kernels that spin for `kernel_ms` each on every SM, one after the
// other, until `seconds` have passed or SIGTERM. Throws gpu::GpuError without a GPU.
void run_gpu_hog(double seconds, double kernel_ms);

}  // namespace tandem::bench
