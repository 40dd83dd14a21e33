// SIGINT and SIGTERM as requests to stop. A long command (tandem run, tandem gen) installs the
// handler, polls stop_requested() at points where it can stop cleanly, finishes what is in flight
// and exits with 128 + the signal's number, as a shell reports a process the signal ended.
//
// A second signal ends the process at once, with the signal's default action: a user who presses
// Ctrl-C twice means it. Before that, the handler removes the temporary files registered with
// TempFileGuard (outputs not yet put in place, io/output_file.h), so nothing half-written stays.
#pragma once

#include <atomic>

namespace tandem {

// Installs the handler for SIGINT and SIGTERM (again: no effect).
void install_stop_handler();

// 0 until the first SIGINT or SIGTERM after install_stop_handler(); then that signal's number.
int stop_signal();
inline bool stop_requested() { return stop_signal() != 0; }

// The flag itself, for loops that poll it with a relaxed load.
const std::atomic<int>& stop_flag();

// "SIGINT", "SIGTERM", or "a signal" for any other.
const char* stop_signal_name(int sig);

// Registers a temporary file for removal if a second signal ends the process, for as long as the
// guard lives. A full table (kSlots files at once) registers nothing: the file may then stay.
class TempFileGuard {
 public:
  static constexpr int kSlots = 16;
  explicit TempFileGuard(const char* path);
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace tandem
