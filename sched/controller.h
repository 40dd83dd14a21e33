// Controllers of the adaptive scheduler: each tick (10 ms) the scheduler thread hands one an
// Observation of its devices and applies the Decision it returns (shares of the flow-hash shards,
// batch targets). A controller is a deterministic function of the observations it has been given
// (no clocks, threads or unseeded randomness), so every policy is tested on a simulated plant
// (sched/sched_sim_test.cc) and runs unchanged on the real one.
//
// Whenever a controller knows its split, Decision::share holds it (summing to 1 over the devices,
// 0 for failed ones) even when `change` is false; `reason` is set whenever `change` is true.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sched/observation.h"

namespace tandem::sched {

class Controller {
 public:
  virtual ~Controller() = default;
  virtual Decision decide(const Observation& obs) = 0;
  virtual std::string name() const = 0;
};

// The baselines "cpu only", "gpu only", "static split": `share` and `batch` (0: keep) per device,
// applied on the first tick. Afterwards the split changes only when the set of failed devices does
// (their share goes to the others in proportion), since a static split must not feed a dead device.
std::unique_ptr<Controller> make_static_controller(std::vector<double> share, std::vector<uint32_t> batch);

// NBA's throughput hill-climbing balancer (ANLAB-KAIST/NBA, elements/loadbalancers/
// LoadBalanceThruput.hh). w, the CPU-kind devices' share in per mille, moves by step x momentum every
// `update_ticks` ticks: momentum grows (up to +-max_momentum) while the mean achieved throughput of
// the ticks since the last update rises, else steps toward zero and across it. CPU-kind devices
// split w equally, the GPU and sim devices 1 - w. Batches are left alone.
struct NbaOptions {
  int permille_step = 20;
  int max_momentum = 2;
  int update_ticks = 5;
  int initial_permille = 500;
};
std::unique_ptr<Controller> make_nba_controller(NbaOptions o = {});

// A capacity model per device (EWMA of packets per busy second, or of the rate while saturated),
// solved for the split the policy wants, and damped: a deadband, a dwell before reversing, a cap on
// the share moved per tick, lambda hysteresis on the device set. Batches are left alone.
struct ModelOptions {
  Policy policy = Policy::kThroughput;
  double ewma = 0.2;        // weight of a new capacity sample
  double deadband = 0.02;   // no change while every share is within this of its target
  int min_dwell_ticks = 5;  // ticks after a change before one in the opposite direction
  double max_move = 0.10;   // most share moved per tick (largest per-device change), unless overloaded
  double rho_max = 0.85;    // energy: the highest utilisation a device set may run at
  double lambda = 1.15;     // a device joining or leaving must be predicted this much better
};
std::unique_ptr<Controller> make_model_controller(ModelOptions o = {});

// Koromilas et al. section 4.2 over a profile table (section 4.1). Step 1: among the entries that
// sustain offered x (1 + margin), the policy's best (throughput: most Mpps; latency: least p99;
// energy: least joules per Mbit at the offered rate, an entry using more devices only if it saves
// lambda over the best using fewer), or the highest-Mpps entry if none does; switch only if it
// beats the current by lambda or the current cannot sustain. Step 3: a device measured
// off its expected rate by more than delta for confirm_ticks ticks lowers the health of the entries
// it limits and starts a batch search (x alpha while slower, / beta while faster, the log-step
// halved on each reversal, done below 2^(1/8)), then step 1 again. A device's measured capacity
// stands until it carries its share of the load unsaturated for recover_ticks in a row; while the
// current entry does not use it, it grows back (regain), so that a device slowed for a while is
// tried again.
struct KoromilasOptions {
  Policy policy = Policy::kThroughput;
  double lambda = 1.15;
  double alpha = 2;
  double beta = 2;
  double delta = 0.10;
  double margin = 0.10;
  int confirm_ticks = 3;
  // Per tick, the capacity measured for a device the current entry does not use grows back by this
  // factor (up to no limit), so that a device slowed by a passing load (another process on the GPU)
  // is tried again; if it is still slow, it is measured again.
  double regain = 0.02;
  // While the current entry cannot sustain the offered load, every device it does not use is taken
  // at its profile again, at most once per this many ticks (the load may have changed what it can do).
  int reprobe_ticks = 50;
  // A device used by the current entry whose capacity was lowered counts as recovered (its
  // measured capacity forgotten) after carrying its share of the load unsaturated this many ticks in a row.
  int recover_ticks = 10;
  uint32_t min_batch = 32;
  uint32_t max_batch = 2048;
};
std::unique_ptr<Controller> make_koromilas_controller(std::vector<ProfileEntry> table, KoromilasOptions o = {});

// Why `d` may not be applied to the devices of `obs` ("" when it may): with change set, one share
// and one batch per device, shares finite, non-negative, summing to 1 within 1e-9, 0 for failed
// devices, and a reason. The scheduler checks every decision with it; so do the tests.
std::string validate_decision(const Observation& obs, const Decision& d);

}  // namespace tandem::sched
