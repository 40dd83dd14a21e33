#include "cli/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace tandem::cli {

namespace {

// Only async-signal-safe calls from here on: write(2), and backtrace(3), loaded beforehand.
void say(const char* s) {
  const size_t n = std::strlen(s);
  if (write(STDERR_FILENO, s, n) < 0) return;
}

void say_hex(uintptr_t v) {
  char buf[2 + 16 + 1];
  buf[0] = '0';
  buf[1] = 'x';
  for (int i = 0; i < 16; ++i) buf[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 0xF];
  buf[18] = 0;
  say(buf);
}

void on_fatal(int sig, siginfo_t* info, void*) {
  say("tandem: fatal signal ");
  say(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL" : "SIGFPE");
  say(" at address ");
  say_hex(reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr));
  say("; the stack (addr2line -Cfe tandem ADDRESS names the functions):\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  // The handler was reset on entry: the signal, raised again, ends the process as it would have.
  raise(sig);
}

}  // namespace

void install_crash_report() {
#if defined(__SANITIZE_ADDRESS__)
  return;
#else
  void* warm[1];
  backtrace(warm, 1);  // loads the unwinder now: it allocates on its first call
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) sigaction(sig, &sa, nullptr);
#endif
}

}  // namespace tandem::cli
