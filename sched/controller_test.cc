// Controllers against hand-made observations and tiny plants: pure, deterministic, fast.
#include "sched/controller.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>

namespace tandem::sched {
namespace {

DeviceObs device(const std::string& id, DeviceKind kind, double share) {
  DeviceObs d;
  d.id = id;
  d.kind = kind;
  d.share = share;
  d.busy = kind == DeviceKind::kGpu ? -1 : 0;
  return d;
}

Observation cpu_gpu(double cpu_share = 0.5) {
  Observation obs;
  obs.tick_s = 0.01;
  obs.mean_frame_bytes = 64;
  obs.dev = {device("cpu0", DeviceKind::kCpu, cpu_share), device("gpu0", DeviceKind::kGpu, 1 - cpu_share)};
  return obs;
}

// Checks `d` and, when it changes something, applies it to `obs` as the scheduler would.
void apply(Observation& obs, const Decision& d) {
  ASSERT_EQ(validate_decision(obs, d), "") << d.reason;
  if (!d.change) return;
  for (size_t i = 0; i < obs.dev.size(); ++i) {
    obs.dev[i].share = d.share[i];
    if (d.batch[i] > 0) obs.dev[i].batch = d.batch[i];
  }
}

// A plant without queues: each device carries min(its share of the offered rate, its capacity).
struct FlatPlant {
  std::vector<double> cap;  // pps
  void step(Observation& obs, double offered) const {
    obs.offered_pps = offered;
    obs.achieved_pps = 0;
    for (size_t d = 0; d < obs.dev.size(); ++d) {
      DeviceObs& o = obs.dev[d];
      const double load = o.failed ? 0 : o.share * offered;
      o.pps = std::min(load, cap[d]);
      o.saturated = load > cap[d];
      if (o.kind != DeviceKind::kGpu) o.busy = o.pps / cap[d];
      obs.achieved_pps += o.pps;
    }
  }
};

TEST(Policy, NamesRoundTrip) {
  for (Policy p : {Policy::kThroughput, Policy::kLatency, Policy::kEnergy}) EXPECT_EQ(parse_policy(policy_name(p)), p);
  EXPECT_THROW(parse_policy("fastest"), std::invalid_argument);
}

TEST(Policy, JoulesPerMbitInterpolatesPower) {
  ProfileEntry e;
  e.mpps_max = 10, e.watts_idle = 100, e.watts_max = 200;
  // Half load: 150 W over 5 Mpps x 100 bytes x 8 bits = 4000 Mbit/s.
  EXPECT_DOUBLE_EQ(joules_per_mbit(e, 5, 100), 150.0 / 4000);
  EXPECT_TRUE(std::isinf(joules_per_mbit(e, 0, 100)));
}

TEST(StaticController, ChangesOnceOnTheFirstTick) {
  auto c = make_static_controller({0.3, 0.7}, {64, 1024});
  Observation obs = cpu_gpu();
  int changes = 0;
  for (int t = 0; t < 100; ++t) {
    const Decision d = c->decide(obs);
    if (t == 0) {
      ASSERT_TRUE(d.change);
      EXPECT_DOUBLE_EQ(d.share[0], 0.3);
      EXPECT_EQ(d.batch[1], 1024u);
    }
    changes += d.change;
    apply(obs, d);
  }
  EXPECT_EQ(changes, 1);
  obs.dev[1].failed = true;  // a static split must still not feed a dead device
  const Decision d = c->decide(obs);
  EXPECT_TRUE(d.change);
  EXPECT_EQ(d.share[1], 0);
  apply(obs, d);
}

TEST(NbaController, HillClimbsToTheThroughputPeak) {
  auto c = make_nba_controller();
  Observation obs = cpu_gpu();
  auto achieved = [](double w) { return 10e6 * (1 - std::pow((w - 700) / 1000, 2)); };  // best at w* = 700
  std::vector<double> w_at_update;
  for (int t = 0; t < 3000; ++t) {
    obs.achieved_pps = obs.offered_pps = achieved(obs.dev[0].share * 1000);
    const Decision d = c->decide(obs);
    apply(obs, d);
    if (d.change) w_at_update.push_back(obs.dev[0].share * 1000);
  }
  ASSERT_GE(w_at_update.size(), 100u);
  // The climb keeps circling the peak (momentum overshoots it by a step or two); over the last
  // updates it centres on it and never strays far.
  double sum = 0;
  for (size_t i = w_at_update.size() - 100; i < w_at_update.size(); ++i) {
    sum += w_at_update[i];
    EXPECT_NEAR(w_at_update[i], 700, 100);
    EXPECT_GE(achieved(w_at_update[i]), 0.96 * achieved(700));
  }
  EXPECT_NEAR(sum / 100, 700, 0.04 * 700);
}

TEST(NbaController, SplitsAmongDeviceKinds) {
  auto c = make_nba_controller({.initial_permille = 600});
  Observation obs = cpu_gpu();
  obs.dev.push_back(device("cpu1", DeviceKind::kCpu, 0));
  obs.dev.push_back(device("gpu1", DeviceKind::kGpu, 0));
  const Decision d = c->decide(obs);
  ASSERT_EQ(validate_decision(obs, d), "");
  EXPECT_DOUBLE_EQ(d.share[0], 0.3);
  EXPECT_DOUBLE_EQ(d.share[2], 0.3);
  EXPECT_DOUBLE_EQ(d.share[1], 0.2);
  obs.dev[0].failed = obs.dev[2].failed = true;  // no CPU left: the GPUs take all
  const Decision e = c->decide(obs);
  ASSERT_EQ(validate_decision(obs, e), "");
  EXPECT_TRUE(e.change);
  EXPECT_DOUBLE_EQ(e.share[1], 0.5);
}

TEST(ModelController, SharesFollowCapacitiesFromBusy) {
  auto c = make_model_controller({});
  Observation obs = cpu_gpu();
  obs.dev[1] = device("cpu1", DeviceKind::kCpu, 0.5);
  const FlatPlant plant{{10e6, 30e6}};
  for (int t = 0; t < 60; ++t) {
    plant.step(obs, 20e6);
    apply(obs, c->decide(obs));
  }
  EXPECT_NEAR(obs.dev[0].share, 0.25, 0.021);  // within the deadband of 10 : 30
  EXPECT_NEAR(obs.achieved_pps, 20e6, 1);
}

TEST(ModelController, LearnsAnUnsaturatedGpuByProbing) {
  auto c = make_model_controller({});
  Observation obs = cpu_gpu();
  const FlatPlant plant{{10e6, 30e6}};
  for (int t = 0; t < 60; ++t) {
    plant.step(obs, 36e6);  // needs 10 : 26; the GPU's busy is unknown, only its saturation tells
    apply(obs, c->decide(obs));
  }
  EXPECT_GE(obs.achieved_pps, 0.95 * 36e6);
}

TEST(ModelController, FailedDeviceGetsNothingAtOnce) {
  auto c = make_model_controller({});
  Observation obs = cpu_gpu();
  const FlatPlant plant{{10e6, 30e6}};
  plant.step(obs, 20e6);
  const Decision first = c->decide(obs);  // a change: the dwell would now hold a reversal
  apply(obs, first);
  obs.dev[1].failed = true;
  plant.step(obs, 20e6);
  const Decision d = c->decide(obs);
  ASSERT_EQ(validate_decision(obs, d), "");
  ASSERT_TRUE(d.change);
  EXPECT_EQ(d.share[1], 0);
  EXPECT_DOUBLE_EQ(d.share[0], 1);
  EXPECT_NE(d.reason.find("gpu0 failed"), std::string::npos) << d.reason;
}

TEST(ModelController, EnergyUsesOneDeviceAtLowLoadAndBothAtHighLoad) {
  auto c = make_model_controller({.policy = Policy::kEnergy});
  Observation obs = cpu_gpu();
  const FlatPlant plant{{10e6, 30e6}};
  auto power = [&] {  // the CPU idles low and costs little; the GPU is expensive even when idle
    const double u0 = obs.dev[0].pps / 10e6, u1 = obs.dev[1].pps / 30e6;
    obs.dev[0].watts = obs.dev[0].share > 0 ? 20 + 20 * u0 : 5;
    obs.dev[1].watts = obs.dev[1].share > 0 ? 100 + 100 * u1 : 20;
  };
  for (int t = 0; t < 50; ++t) {
    plant.step(obs, 3e6);
    power();
    apply(obs, c->decide(obs));
  }
  EXPECT_DOUBLE_EQ(obs.dev[0].share, 1);
  EXPECT_EQ(obs.dev[1].share, 0);
  for (int t = 0; t < 50; ++t) {
    plant.step(obs, 20e6);
    power();
    apply(obs, c->decide(obs));
  }
  EXPECT_GT(obs.dev[0].share, 0.1);
  EXPECT_GT(obs.dev[1].share, 0.1);
  EXPECT_NEAR(obs.achieved_pps, 20e6, 1);
  for (int t = 0; t < 50; ++t) {  // and back: the GPU leaves again
    plant.step(obs, 3e6);
    power();
    apply(obs, c->decide(obs));
  }
  EXPECT_EQ(obs.dev[1].share, 0);
}

TEST(ModelController, EnergyDoesNotFlapAtTheCapacityThreshold) {
  auto c = make_model_controller({.policy = Policy::kEnergy});
  Observation obs = cpu_gpu();
  const FlatPlant plant{{10e6, 30e6}};
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> noise(0.95, 1.05);
  int toggles = 0;
  bool gpu_on = true;
  for (int t = 0; t < 500; ++t) {
    plant.step(obs, 8.5e6 * noise(rng));  // around rho_max x the CPU's capacity
    obs.dev[0].watts = obs.dev[0].share > 0 ? 20 + 20 * obs.dev[0].pps / 10e6 : 5;
    obs.dev[1].watts = obs.dev[1].share > 0 ? 100 + 100 * obs.dev[1].pps / 30e6 : 20;
    apply(obs, c->decide(obs));
    toggles += (obs.dev[1].share > 0) != gpu_on;
    gpu_on = obs.dev[1].share > 0;
  }
  EXPECT_LE(toggles, 2);
}

TEST(ModelController, LatencyPolicyKeepsEveryDeviceBelowSaturation) {
  for (const int cpus : {2, 3}) {  // 3 devices: the 1% grid; 4: the greedy search
    auto c = make_model_controller({.policy = Policy::kLatency});
    Observation obs = cpu_gpu();
    obs.dev[0].batch = 32, obs.dev[1].batch = 1024;
    FlatPlant plant{{10e6, 30e6}};
    for (int k = 1; k < cpus; ++k) {
      obs.dev.push_back(device("cpu" + std::to_string(k), DeviceKind::kCpu, 0));
      obs.dev.back().batch = 32;
      plant.cap.push_back(10e6);
    }
    for (int t = 0; t < 100; ++t) {
      plant.step(obs, 30e6);
      apply(obs, c->decide(obs));
    }
    EXPECT_NEAR(obs.achieved_pps, 30e6, 1) << obs.dev.size() << " devices";
    for (const DeviceObs& d : obs.dev) EXPECT_FALSE(d.saturated) << d.id;
    // The GPU's 1024-frame batches wait longest even when it idles: it gets less than its
    // capacity's share (at least half), the small-batch CPUs more.
    EXPECT_LT(obs.dev[1].share, 0.5) << obs.dev.size() << " devices";
    EXPECT_GT(obs.dev[1].share, 0.05) << obs.dev.size() << " devices";
  }
}

int reversals_under_noise(ModelOptions o) {
  auto c = make_model_controller(o);
  Observation obs = cpu_gpu();
  obs.dev[1] = device("cpu1", DeviceKind::kCpu, 0.5);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(0.95, 1.05);
  const double cap[2] = {10e6, 20e6};
  int reversals = 0;
  double last_move = 0;
  for (int t = 0; t < 1000; ++t) {
    obs.offered_pps = 15e6 * noise(rng);
    obs.achieved_pps = 0;
    for (int d = 0; d < 2; ++d) {
      DeviceObs& o = obs.dev[d];
      o.pps = std::min(o.share * obs.offered_pps, cap[d]) * noise(rng);
      o.busy = std::min(1.0, o.pps / cap[d] * noise(rng));
      obs.achieved_pps += o.pps;
    }
    const double before = obs.dev[0].share;
    const Decision d = c->decide(obs);
    apply(obs, d);
    if (!d.change) continue;
    const double move = obs.dev[0].share - before;
    if (move * last_move < 0) ++reversals;
    last_move = move;
  }
  return reversals;
}

TEST(ModelController, DeadbandAndDwellDampNoise) {
  // Capacities of 10 and 20 Mpps seen through +-5% noise on rates and busy time, for 1000 ticks.
  EXPECT_LE(reversals_under_noise({}), 5);
  EXPECT_GT(reversals_under_noise({.ewma = 1, .deadband = 0, .min_dwell_ticks = 0}), 50);  // undamped, it chatters
}

// ---- Koromilas -------------------------------------------------------------------------------

ProfileEntry entry(std::vector<double> share, std::vector<uint32_t> batch, double mpps, double p99_us,
                   double watts_idle = 100, double watts_max = 200) {
  ProfileEntry e;
  e.share = std::move(share);
  e.batch = std::move(batch);
  e.mpps_max = mpps;
  e.p99_us = e.p50_us = p99_us;
  e.latency_at_mpps = mpps / 2;
  e.watts_idle = watts_idle;
  e.watts_max = watts_max;
  return e;
}

TEST(KoromilasController, PicksTheBestEntryPerPolicy) {
  const std::vector<ProfileEntry> table = {
      entry({0.3, 0.7}, {64, 1024}, 30, 200, 150, 300),  // fastest
      entry({0.5, 0.5}, {32, 128}, 20, 50, 150, 280),    // lowest latency
      entry({1, 0}, {64, 0}, 12, 150, 60, 100),          // least energy at low rates
  };
  const std::pair<Policy, double> cases[] = {{Policy::kThroughput, 0.3}, {Policy::kLatency, 0.5}, {Policy::kEnergy, 1}};
  for (const auto& [policy, cpu_share] : cases) {
    auto c = make_koromilas_controller(table, {.policy = policy});
    Observation obs = cpu_gpu();
    obs.offered_pps = 5e6;
    const Decision d = c->decide(obs);
    ASSERT_EQ(validate_decision(obs, d), "");
    ASSERT_TRUE(d.change);
    EXPECT_DOUBLE_EQ(d.share[0], cpu_share) << policy_name(policy) << ": " << d.reason;
  }
}

// At a low load the energy policy takes a split only when it saves lambda over a single device.
TEST(KoromilasController, EnergyTakesMoreDevicesOnlyForLambda) {
  for (const double split_idle : {176.0, 150.0}) {  // 7% and 21% below the GPU alone's 190 W
    auto c = make_koromilas_controller({entry({0, 1}, {0, 1024}, 38, 100, 190, 222), entry({1, 0}, {256, 0}, 17, 100, 188, 221),
                                        entry({0.5, 0.5}, {256, 1024}, 31, 100, split_idle, 230)},
                                       {.policy = Policy::kEnergy});
    Observation obs = cpu_gpu();
    obs.offered_pps = 4e6;
    const Decision d = c->decide(obs);
    apply(obs, d);
    if (split_idle > 160) {
      EXPECT_DOUBLE_EQ(obs.dev[1].share, 1) << d.reason;
    } else {
      EXPECT_DOUBLE_EQ(obs.dev[0].share, 0.5) << d.reason;
    }
  }
}

// Starts on #0 (the only entry sustaining 10 Mpps), then offers 5 Mpps, which #1 sustains too.
Decision run_latency_pair(Observation& obs, Controller& c) {
  obs.offered_pps = 10e6;  // only #0 sustains 10 x 1.1
  Decision d = c.decide(obs);
  apply(obs, d);
  EXPECT_DOUBLE_EQ(obs.dev[0].share, 1);
  obs.offered_pps = 5e6;  // now #1 does too
  d = c.decide(obs);
  apply(obs, d);
  return d;
}

TEST(KoromilasController, LambdaHysteresis) {
  for (const double fast_p99 : {91.0, 75.0}) {  // 1.10x and 1.33x better than 100 us
    auto c = make_koromilas_controller({entry({1, 0}, {64, 0}, 20, 100), entry({0, 1}, {0, 256}, 8, fast_p99)},
                                       {.policy = Policy::kLatency});
    Observation obs = cpu_gpu();
    const Decision d = run_latency_pair(obs, *c);
    if (fast_p99 > 90) {
      EXPECT_FALSE(d.change) << d.reason;
      EXPECT_DOUBLE_EQ(obs.dev[0].share, 1);
    } else {
      EXPECT_TRUE(d.change);
      EXPECT_DOUBLE_EQ(obs.dev[1].share, 1) << d.reason;
    }
  }
}

TEST(KoromilasController, LeavesAtOnceAnEntryThatCannotSustainTheRate) {
  auto c = make_koromilas_controller({entry({1, 0}, {64, 0}, 20, 100), entry({0, 1}, {0, 256}, 8, 50)},
                                     {.policy = Policy::kLatency});
  Observation obs = cpu_gpu();
  obs.offered_pps = 5e6;
  apply(obs, c->decide(obs));
  ASSERT_DOUBLE_EQ(obs.dev[1].share, 1);  // the low-latency entry
  obs.offered_pps = 10e6;                 // 11 needed, it sustains 8
  const Decision d = c->decide(obs);
  apply(obs, d);
  EXPECT_TRUE(d.change);
  EXPECT_DOUBLE_EQ(obs.dev[0].share, 1) << d.reason;
}

// A GPU whose rate grows with its batch as 40 Mpps x b / (b + k), k set by contention.
struct BatchPlant {
  double k;
  void step(Observation& obs, double offered) const {
    obs.offered_pps = offered;
    for (DeviceObs& o : obs.dev) {
      const double cap = o.kind == DeviceKind::kGpu ? 40e6 * o.batch / (o.batch + k) : 5e6;
      const double load = o.share * offered;
      o.pps = std::min(load, cap);
      o.saturated = load > cap;
      if (o.kind == DeviceKind::kCpu) o.busy = o.pps / cap;
    }
  }
};

TEST(KoromilasController, DeviationScalesHealthAndSearchesBatches) {
  // Profiled: the GPU alone did 20 Mpps at batch 64. Contention now needs batches near 724 for that.
  auto c = make_koromilas_controller({entry({0, 1}, {0, 64}, 20, 100), entry({1, 0}, {32, 0}, 5, 20)}, {});
  Observation obs = cpu_gpu();
  const BatchPlant plant{700};
  obs.offered_pps = 30e6;
  apply(obs, c->decide(obs));
  ASSERT_EQ(obs.dev[1].batch, 64u);
  std::vector<uint32_t> batches;
  std::string health_reason;
  for (int t = 0; t < 40; ++t) {
    plant.step(obs, 30e6);
    const Decision d = c->decide(obs);
    if (t < 2) {
      EXPECT_FALSE(d.change) << "deviation confirmed too soon: " << d.reason;
    }
    if (d.change && health_reason.empty()) health_reason = d.reason;
    apply(obs, d);
    if (d.change && (batches.empty() || obs.dev[1].batch != batches.back())) batches.push_back(obs.dev[1].batch);
  }
  EXPECT_NE(health_reason.find("health 1.00 -> 0.17"), std::string::npos) << health_reason;
  // 64 -> 128 -> 256 -> 512 (slower than profiled) -> 1024 (faster) -> 724 (as profiled, within delta)
  EXPECT_LE(batches.size(), size_t(std::log2(2048 / 32) + 3));
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(batches.back(), 724u);
  EXPECT_NEAR(obs.dev[1].pps, 20e6, 0.1 * 20e6);
  EXPECT_DOUBLE_EQ(obs.dev[1].share, 1);  // the entry recovered its profile: still the fastest
}

TEST(KoromilasController, LostCapacityMovesToAnotherEntry) {
  // A mixed entry (12 Mpps) under the GPU-only one (20 Mpps); then the GPU tops out near 7.8 Mpps.
  auto c = make_koromilas_controller({entry({0, 1}, {0, 64}, 20, 100), entry({0.5, 0.5}, {32, 256}, 12, 80)}, {});
  Observation obs = cpu_gpu();
  obs.offered_pps = 18e6;
  apply(obs, c->decide(obs));
  ASSERT_DOUBLE_EQ(obs.dev[1].share, 1);
  struct {
    void step(Observation& o, double offered) const {
      o.offered_pps = offered;
      for (DeviceObs& d : o.dev) {
        const double cap = d.kind == DeviceKind::kGpu ? 8e6 * d.batch / (d.batch + 50.0) : 6e6;
        d.pps = std::min(d.share * offered, cap);
        d.saturated = d.share * offered > cap;
      }
    }
  } plant;
  int steps = 0;
  std::string last_reason;
  for (int t = 0; t < 30 && obs.dev[1].share == 1; ++t) {
    plant.step(obs, 18e6);
    const Decision d = c->decide(obs);
    apply(obs, d);
    steps += d.change;
    if (d.change) last_reason = d.reason;
  }
  // The search ends at the largest batch; the GPU-only entry's health drops to about 7.8 / 20, the
  // mixed entry's stays 1 (its GPU half needs only 6 Mpps), so it is now the fastest.
  EXPECT_DOUBLE_EQ(obs.dev[0].share, 0.5) << last_reason;
  EXPECT_LE(steps, int(std::log2(2048 / 32)) + 3);
  EXPECT_NE(last_reason.find("batch search done"), std::string::npos) << last_reason;
}

// Another process takes the GPU for a while: the controller leaves it for the CPU, tries it again
// now and then while it stays slow (each time measured slow again), and returns once it is fast.
TEST(KoromilasController, ASlowedDeviceIsTriedAgainAndRegainedWhenFast) {
  auto c = make_koromilas_controller({entry({0, 1}, {0, 1024}, 40, 100), entry({1, 0}, {256, 0}, 15, 100)}, {});
  Observation obs = cpu_gpu();
  obs.dev[0].batch = 256;
  obs.dev[1].batch = 1024;
  FlatPlant plant{{15e6, 40e6}};
  double& gpu_cap = plant.cap[1];
  auto step = [&] {
    plant.step(obs, 12e6);
    apply(obs, c->decide(obs));
  };
  for (int t = 0; t < 50; ++t) step();
  ASSERT_DOUBLE_EQ(obs.dev[1].share, 1);
  gpu_cap = 5e6;
  int first_on_cpu = -1, tries = 0;
  for (int t = 0; t < 300; ++t) {
    const bool was_gpu = obs.dev[1].share > 0;
    step();
    if (obs.dev[0].share == 1 && first_on_cpu < 0) first_on_cpu = t;
    tries += !was_gpu && obs.dev[1].share > 0;
  }
  EXPECT_GE(first_on_cpu, 0) << "never left the slowed GPU";
  EXPECT_LT(first_on_cpu, 30);
  EXPECT_GE(tries, 1) << "the slowed GPU was never tried again";
  EXPECT_LE(tries, 8) << "tried again too often";
  gpu_cap = 40e6;
  int back = -1;
  for (int t = 0; t < 200 && back < 0; ++t) {
    step();
    if (obs.dev[1].share == 1) back = t;
  }
  EXPECT_GE(back, 0) << "the GPU, fast again, was not regained";
  for (int t = 0; t < 100; ++t) step();
  EXPECT_DOUBLE_EQ(obs.dev[1].share, 1) << "left the fast GPU again";
}

// The traffic made the GPU crawl (DPI payloads full of patterns) and the controller left it; the
// traffic turns back and the CPU alone cannot carry it: the GPU is tried again within reprobe_ticks,
// not after the slow regain from its crawl.
TEST(KoromilasController, ALoadTheEntryCannotCarryRetriesTheDevicesItLeft) {
  auto c = make_koromilas_controller({entry({0, 1}, {0, 1024}, 40, 100), entry({1, 0}, {256, 0}, 5, 100)}, {});
  Observation obs = cpu_gpu();
  obs.dev[0].batch = 256;
  obs.dev[1].batch = 1024;
  FlatPlant plant{{5e6, 40e6}};
  double& gpu_cap = plant.cap[1];
  double offered = 12e6;
  auto step = [&] {
    plant.step(obs, offered);
    obs.backlog = std::max(0.0, obs.backlog + (offered - obs.achieved_pps) * obs.tick_s);  // what waits at the NICs
    apply(obs, c->decide(obs));
  };
  for (int t = 0; t < 20; ++t) step();
  ASSERT_DOUBLE_EQ(obs.dev[1].share, 1);
  gpu_cap = 0.1e6, offered = 0.2e6;  // the CPU carries this alone
  for (int t = 0; t < 100; ++t) step();
  ASSERT_DOUBLE_EQ(obs.dev[0].share, 1);
  gpu_cap = 40e6, offered = 12e6;
  int back = -1;
  for (int t = 0; t < 200 && back < 0; ++t) {
    step();
    if (obs.dev[1].share == 1) back = t;
  }
  EXPECT_GE(back, 0);
  EXPECT_LE(back, 60);
}

// A device slowed while in use, then fast again: once it carries its share unsaturated for
// recover_ticks, its lowered capacity is forgotten and the entry it was too slow for comes back.
TEST(KoromilasController, ADeviceThatKeepsUpAgainIsRestored) {
  auto c = make_koromilas_controller({entry({0, 1}, {0, 1024}, 40, 100), entry({0.5, 0.5}, {256, 1024}, 20, 100),
                                      entry({1, 0}, {256, 0}, 10, 100)},
                                     {});
  Observation obs = cpu_gpu();
  obs.dev[0].batch = 256;
  obs.dev[1].batch = 1024;
  FlatPlant plant{{10e6, 40e6}};
  double& gpu_cap = plant.cap[1];
  auto step = [&] {
    plant.step(obs, 12e6);
    apply(obs, c->decide(obs));
  };
  for (int t = 0; t < 10; ++t) step();
  ASSERT_DOUBLE_EQ(obs.dev[1].share, 1);
  gpu_cap = 8e6;  // the split (6 Mpps for the GPU) sustains 12 again, the GPU alone does not
  for (int t = 0; t < 60; ++t) step();
  ASSERT_DOUBLE_EQ(obs.dev[0].share, 0.5);
  gpu_cap = 40e6;
  int back = -1;
  for (int t = 0; t < 60 && back < 0; ++t) {
    step();
    if (obs.dev[1].share == 1) back = t;
  }
  EXPECT_GE(back, 9) << "restored before it had kept up for recover_ticks (10 ticks: t = 0..9)";
  EXPECT_LE(back, 20) << "not restored (back " << back << ")";
}

// ---- every controller ---------------------------------------------------------------------------

TEST(Controllers, DecisionsStayValidOnArbitraryObservations) {
  const Policy policies[] = {Policy::kThroughput, Policy::kLatency, Policy::kEnergy};
  const std::vector<ProfileEntry> table = {entry({1, 0, 0}, {64, 0, 0}, 10, 20), entry({0, 1, 0}, {0, 512, 0}, 30, 200),
                                           entry({0.2, 0.6, 0.2}, {64, 1024, 64}, 40, 150),
                                           entry({0.5, 0, 0.5}, {32, 0, 32}, 20, 15)};
  std::vector<std::unique_ptr<Controller>> controllers;
  controllers.push_back(make_static_controller({1, 0, 0}, {}));
  controllers.push_back(make_nba_controller());
  for (Policy p : policies) controllers.push_back(make_model_controller({.policy = p}));
  for (Policy p : policies) controllers.push_back(make_koromilas_controller(table, {.policy = p}));
  for (auto& c : controllers) {
    std::mt19937 rng(11);
    auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    Observation obs = cpu_gpu();
    obs.dev.push_back(device("cpu1", DeviceKind::kCpu, 0));
    int changes = 0;
    for (int t = 0; t < 2000; ++t) {
      obs.offered_pps = uniform(0, 50e6);
      obs.backlog = uniform(0, 1) < 0.7 ? 0 : uniform(0, 1e6);
      obs.achieved_pps = 0;
      for (DeviceObs& o : obs.dev) {
        if (uniform(0, 1) < 0.02) o.failed = !o.failed;  // fail and recover, now and then
        o.failed = o.failed && !(t > 120 && t < 130);
        if (t >= 100 && t < 110) o.failed = true;  // and all at once for a while
        o.pps = o.failed ? 0 : uniform(0, 1.2) * o.share * obs.offered_pps;
        o.busy = o.kind == DeviceKind::kGpu ? -1 : uniform(0, 1);
        o.saturated = uniform(0, 1) < 0.2;
        o.watts = uniform(0, 1) < 0.2 ? 0 : uniform(10, 300);
        o.batch = uint32_t(uniform(1, 4096));
        obs.achieved_pps += o.pps;
      }
      const Decision d = c->decide(obs);
      ASSERT_EQ(validate_decision(obs, d), "") << c->name() << " at tick " << t << ": " << d.reason;
      changes += d.change;
      apply(obs, d);
    }
    std::printf("%-20s %4d changes in 2000 arbitrary ticks\n", c->name().c_str(), changes);
  }
}

TEST(Controllers, NothingToDecideWhenEveryDeviceFailed) {
  Observation obs = cpu_gpu();
  obs.dev[0].failed = obs.dev[1].failed = true;
  std::vector<std::unique_ptr<Controller>> controllers;
  controllers.push_back(make_static_controller({1, 0}, {}));
  controllers.push_back(make_nba_controller());
  controllers.push_back(make_model_controller({}));
  controllers.push_back(make_koromilas_controller({entry({1, 0}, {64, 0}, 10, 20)}, {}));
  for (auto& c : controllers) EXPECT_FALSE(c->decide(obs).change) << c->name();
}

TEST(KoromilasController, WithoutAUsableEntryFallsBackOnce) {
  auto c = make_koromilas_controller({entry({0, 1}, {0, 64}, 10, 20)}, {});
  Observation obs = cpu_gpu();
  obs.dev[1].failed = true;
  const Decision first = c->decide(obs), second = c->decide(obs);
  ASSERT_EQ(validate_decision(obs, first), "");
  EXPECT_TRUE(first.change);
  EXPECT_DOUBLE_EQ(first.share[0], 1);
  EXPECT_FALSE(second.change);
}

}  // namespace
}  // namespace tandem::sched
