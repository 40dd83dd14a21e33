#include "core/stop_signal.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace tandem {
namespace {

std::atomic<int> g_signal{0};

// The handler may only call async-signal-safe functions (unlink, sigaction, raise) and read
// lock-free atomics: slots are claimed with `used`, filled, then published with `ready`.
struct TempSlot {
  std::atomic<bool> used{false};
  std::atomic<bool> ready{false};
  char path[PATH_MAX];
};
TempSlot g_slots[TempFileGuard::kSlots];

void on_signal(int sig) {
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) return;  // the first: a request to stop
  for (TempSlot& s : g_slots) {
    if (s.ready.load()) unlink(s.path);
  }
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  raise(sig);
}

}  // namespace

void install_stop_handler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads and writes in progress go on: the command polls the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_signal.load(std::memory_order_relaxed); }

const std::atomic<int>& stop_flag() { return g_signal; }

const char* stop_signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "a signal";
}

TempFileGuard::TempFileGuard(const char* path) {
  if (std::strlen(path) >= sizeof g_slots[0].path) return;
  for (int i = 0; i < kSlots; ++i) {
    bool free = false;
    if (!g_slots[i].used.compare_exchange_strong(free, true)) continue;
    std::strcpy(g_slots[i].path, path);
    g_slots[i].ready.store(true);
    slot_ = i;
    return;
  }
}

TempFileGuard::~TempFileGuard() {
  if (slot_ < 0) return;
  g_slots[slot_].ready.store(false);
  g_slots[slot_].used.store(false);
}

}  // namespace tandem
