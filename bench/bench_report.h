// Shared pieces of `tandem bench` commands: statistics over repetitions, the machine description,
// a printed table and the JSON report.
#pragma once

#include <nlohmann/json.hpp>

#include "core/flow_hash.h"
#include "core/machine_info.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace tandem::bench {

double median(std::vector<double> v);

// Order-sensitive digest of every packet's verdict and bytes, to compare one path's output with
// another's (a GPU path with the CPU's) without keeping the packets.
struct FrameDigest {
  uint64_t value = 0;
  uint64_t index = 0;
  void add(const uint8_t* frame, uint32_t len, uint32_t verdict) {
    uint64_t h = mix64(index++ * 0x9e3779b97f4a7c15ULL ^ verdict);
    for (uint32_t i = 0; i < len; i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, frame + i, std::min<uint32_t>(8, len - i));
      h = mix64(h ^ w);
    }
    value += h;
  }
  bool operator==(const FrameDigest&) const = default;
};

// Seconds since t0 on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The least duration of one timed repetition in the benches that time with time_reps (and bench
// dpi): `tandem bench --min-seconds S CMD`, 0.5 s by default. A repetition of a few milliseconds
// measures the machine's hiccups as much as the code.
double& min_rep_seconds();
// Set once a repetition has been timed with that window: write_json then reports it
// (`min_rep_seconds`), and only then (benches with their own --min-seconds report theirs).
bool& min_rep_seconds_used();

// Runs f once to warm up (page faults, caches, TLB), then `reps` timed repetitions, each calling f
// again until min_rep_seconds() have passed (at least once): the seconds of one call of f, per
// repetition (the repetition's time over its calls, so the rate is what a stopwatch shows).
template <typename F>
std::vector<double> time_reps(int reps, F&& f) {
  min_rep_seconds_used() = true;
  f();
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t calls = 0;
    double elapsed = 0;
    do {
      f();
      ++calls;
      elapsed = seconds_since(t0);
    } while (elapsed < min_rep_seconds());
    s.push_back(elapsed / static_cast<double>(calls));
  }
  return s;
}

// The item count for the repetitions of a run given as seconds_of(items) -> seconds it took:
// `items`, grown (up to eight times) until one run lasts 1.2x `min_seconds`, the margin for the
// machine's spread; each growth aims at 1.5x. The runs that find it are warm-ups, not
// repetitions. min_seconds <= 0: `items` as given, nothing run.
template <typename F>
uint64_t items_for_window(uint64_t items, double min_seconds, F&& seconds_of) {
  for (int grow = 0; grow < 8 && min_seconds > 0; ++grow) {
    const double secs = seconds_of(items);
    if (secs >= min_seconds * 1.2) break;
    const double rate = static_cast<double>(items) / std::max(secs, 1e-6);
    items = std::max<uint64_t>(items + 1, static_cast<uint64_t>(rate * min_seconds * 1.5));
  }
  return items;
}

// Items per second of `threads` threads pinned to CPUs 0.., each calling f(t) (the items it did)
// until min_seconds have passed (at least once).
template <class F>
double parallel_rate(int threads, double min_seconds, F&& f) {
  std::atomic<uint64_t> done{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      pin_this_thread(t);
      uint64_t n = 0;
      do n += f(t); while (seconds_since(t0) < min_seconds);
      done += n;
    });
  }
  for (auto& th : pool) th.join();
  return done / seconds_since(t0);
}

// splitmix64: the benches' reproducible random numbers, the same on every platform.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by multiply-shift (no modulo bias worth measuring, no division).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
};

// Bytes of [p, p + len) backed by transparent hugepages, from /proc/self/smaps (-1 if unknown):
// with 4 KiB pages, random lookups in tables of tens of MiB miss the TLB, which changes the picture.
long long hugepage_bytes_in(const void* p, size_t len);

// "a,b,,c" -> {"a", "b", "c"}: the comma-separated lists of bench flags.
std::vector<std::string> split_list(const std::string& s);

// One measured configuration: `items` processed per repetition, seconds per repetition.
struct Row {
  std::string name;
  std::string note;
  double items = 0;
  std::vector<double> seconds;
  nlohmann::json extra = nullptr;  // more fields for this row's JSON (an object), e.g. counters
  double median_rate() const { return items / median(seconds); }
};

// {"cpu_model", "logical_cpus", ..., "gpu": {...} or null}
nlohmann::json machine_json();

// Prints rows as a table of median rate, time per item and ratio to `baseline` (a row name).
void print_table(const std::string& title, const std::string& unit, const std::vector<Row>& rows,
                 const std::string& baseline);

nlohmann::json rows_json(const std::vector<Row>& rows);

// Writes `report` to `path` (creating parent directories), whole or not at all
// (io/output_file.h); throws IoError naming the file on failure.
void write_json(const std::string& path, const nlohmann::json& report);

}  // namespace tandem::bench
