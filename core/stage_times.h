// Where a CPU worker's time goes, stage by stage (VPP's per-node clocks, `show runtime`): the
// time-stamp counter read between the stages of every burst, summed per worker. A read costs
// about 20-25 cycles and a timed batched burst makes nine, about 2 ns a frame at 32 frames a
// burst; the data path reads it only when asked (WorkersConfig::stage_times), through a template
// parameter, so the untimed path has no reads at all, and kReceive times the receive stage alone
// (two reads a burst) for benches that want only the receive share.
#pragma once

#include <array>
#include <cstdint>

#include <chrono>

namespace tandem {

// The stages, in the order a burst passes them. Framework stages: receive, finish (latency,
// transmit, freeing cells, progress) and the loop's own work (budget, arrival clock, oversize
// frames, RCU); app stages: parse and classify, lookup, apply; counting is the framework's again.
// An app that does not split its work (IPsec, hashing), and the scalar path, have it all under
// kApp ("app_whole"), counting included: there counting is part of the app's figure, on the
// batched path of the apps built from ForwardAppImpl it is a framework stage of its own.
enum class Stage : int { kReceive, kParse, kLookup, kApply, kApp, kCount, kLatency, kTransmit, kLoop, kStages };

inline constexpr int kStageCount = static_cast<int>(Stage::kStages);

// What a worker times: nothing, the receive stage alone, or every stage.
enum class StageTiming { kOff, kReceive, kAll };

inline const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kReceive: return "receive";
    case Stage::kParse: return "parse";
    case Stage::kLookup: return "lookup";
    case Stage::kApply: return "apply";
    case Stage::kApp: return "app_whole";
    case Stage::kCount: return "counters";
    case Stage::kLatency: return "latency";
    case Stage::kTransmit: return "transmit";
    case Stage::kLoop: return "loop";
    default: return "?";
  }
}

// Ticks of the time-stamp counter (constant rate on every x86 the data path targets); elsewhere,
// nanoseconds of the steady clock.
inline uint64_t stage_ticks() {
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__CUDA_ARCH__)
  return __builtin_ia32_rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

struct StageTimes {
  std::array<uint64_t, kStageCount> ticks{};
  uint64_t total_ticks = 0;  // the workers' loops from start to end, summed (the stages and the rest)
  uint64_t packets = 0;      // frames the stages were timed over
  uint64_t bursts = 0;       // receives that gave frames (packets / bursts: the burst the stages ran on)
  uint64_t empty_receives = 0;  // receives after the first frame that gave none (their time is in
                                // receive and loop; a live port's wait for its first frame is not timed)
  double tick_ns = 0;        // nanoseconds per tick, measured over the run

  // Adds the time since `since` to stage `s` and returns now, the next stage's start.
  uint64_t lap(Stage s, uint64_t since) {
    const uint64_t t = stage_ticks();
    ticks[static_cast<int>(s)] += t - since;
    return t;
  }
  uint64_t of(Stage s) const { return ticks[static_cast<int>(s)]; }
  void add(const StageTimes& o) {
    for (int i = 0; i < kStageCount; ++i) ticks[i] += o.ticks[i];
    total_ticks += o.total_ticks;
    packets += o.packets;
    bursts += o.bursts;
    empty_receives += o.empty_receives;
  }
};

}  // namespace tandem
