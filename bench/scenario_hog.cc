#include "bench/scenario_hog.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/machine_info.h"

extern char** environ;

namespace tandem::bench {

void CpuHog::start(const std::vector<int>& cores) {
  stop();
  stop_.store(false);
  unpinned_.store(0);
  for (int c : cores) {
    threads_.emplace_back([this, c] {
      if (!pin_this_thread(c)) unpinned_.fetch_add(1);
      volatile uint64_t x = 0;
      while (!stop_.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 4096; ++i) x = x + 1;
      }
    });
  }
}

void CpuHog::stop() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void GpuHog::start(double max_seconds) {
  reap();
  char arg0[] = "tandem";
  char arg1[] = "hog-gpu";
  char arg2[] = "--seconds";
  std::string secs = std::to_string(max_seconds);
  char* argv[] = {arg0, arg1, arg2, secs.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ);
  if (rc != 0) throw std::runtime_error(std::string("GPU hog: cannot start a process: ") + std::strerror(rc));
  pid_ = pid;
  ended_early_ = false;
  signalled_ = false;
}

void GpuHog::signal_stop() {
  if (pid_ <= 0 || signalled_) return;
  int status = 0;
  ended_early_ = waitpid(pid_, &status, WNOHANG) == pid_;
  if (ended_early_) {
    pid_ = -1;
    return;
  }
  kill(pid_, SIGTERM);
  signalled_ = true;
}

std::string GpuHog::reap() {
  if (ended_early_) {
    ended_early_ = false;
    return "the GPU hog ended before it was told to stop (no GPU context?)";
  }
  if (pid_ <= 0) return "";
  if (!signalled_) kill(pid_, SIGTERM);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return "the GPU hog exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return "";
}

}  // namespace tandem::bench
