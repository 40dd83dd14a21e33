// The adaptive scheduler's profile table (Koromilas et al. section 4.1): every profiled
// configuration of a run's devices (a split, batch sizes, what it was measured to do), the per-device
// cost models fitted from the profiling batches, and what was learned online since (health). It is
// saved as JSON next to the run's results so that a later run of the same app, traffic and machine
// starts from it instead of profiling again (matches() says when it may).
//
// File layout ("tandem-schedule-table/1"):
//   {"format":"tandem-schedule-table/1",
//    "key":{"app":..,"app_table":..,"traffic":..,"cpu_model":..,"logical_cpus":16,"gpu_name":..,
//           "tandem_version":..,"devices":["cpu0","gpu0"]},
//    "energy_source":"...",
//    "models":{"gpu0":{"a_ns":..,"b_ns_per_byte":..,"c_ns_per_frame":..,"parallel":..,"samples":..}},
//    "device_health":{"gpu0":1.0},
//    "entries":[{"share":[0.4,0.6],"batch":[256,1024],"mpps_max":..,"p50_us":..,"p99_us":..,
//                "latency_at_mpps":..,"watts_max":..,"watts_idle":..,"health":1.0,"profiled":true}]}
// Every field is required but "profiled" (absent: false); unknown fields are ignored (a newer
// writer may add some).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sched/observation.h"

namespace tandem::sched {

// What a table was made for. A table is only valid for the same app (and its table: routes,
// rules), traffic, machine and Tandem build, over the same device list in the same order.
struct TableKey {
  std::string app, app_table, traffic, cpu_model, gpu_name, tandem_version;
  int logical_cpus = 0;
  std::vector<std::string> devices;
  bool operator==(const TableKey&) const = default;
};

// One finished batch on one device: its size and how long it took (publish -> done).
struct BatchSample {
  uint32_t frames = 0;
  uint64_t bytes = 0;
  double service_ns = 0;
};

// Least-squares fit of a + b x bytes + c x frames to the samples, with every coefficient >= 0
// (a negative cost is noise, and would make capacity_pps() promise the impossible). The fit is the
// exact non-negative least-squares optimum: each subset of the three terms is solved by least
// squares (normal equations of unit-norm columns); the subsets that are rank deficient or give a
// negative coefficient are dropped, and the one with the least squared error wins; near-ties (1e-9
// relative) go to the earlier of {a,b,c}, {a,b}, {a,c}, {b,c}, {b}, {c}, {a}. Consequences, on
// purpose:
//  - fixed frame size (bytes = k x frames, collinear): {a,b,c} and {b,c} are rank deficient and
//    {a,b} ties {a,c}, so the per-frame cost is folded into b (c = 0). capacity_pps() predicts the
//    same for that frame size either way; a later fit over mixed sizes separates them.
//  - one distinct (frames, bytes) point: b alone (cost proportional to bytes). Splitting it into a
//    fixed cost would promise that larger batches are free; proportional is the cautious reading.
// Samples with a non-finite or negative time are skipped; `samples` counts the ones used. No usable
// sample: all coefficients 0. `parallel` is kept as given.
DeviceModel fit_device_model(const std::vector<BatchSample>& samples, double parallel);

// Recursive least squares with a forgetting factor: the online refinement of a fitted model, one
// finished batch at a time, so that a device that slows down (contention, throttling) or speeds up
// is followed; drift within about 1 / (1 - forget) batches. Regressors are scaled by the first
// sample's bytes and frames so that the covariance is well conditioned; the covariance's trace is
// bounded so that directions the traffic does not excite (fixed batch size) do not wind up. A step change
// (three batches in a row mispredicted by over 4 sigma, the same way) resets the covariance, so the
// model follows it within a few batches instead of decaying toward it. The internal estimate is
// unconstrained (so it stays unbiased); model() reports it with negatives clamped to 0.
class DeviceModelRls {
 public:
  explicit DeviceModelRls(DeviceModel initial, double forget = 0.98);
  void update(const BatchSample& s);
  const DeviceModel& model() const { return model_; }
  uint32_t changes_detected() const { return resets_; }

 private:
  void export_model();
  DeviceModel model_;
  double forget_;
  bool scaled_ = false;
  double byte_scale_ = 1, frame_scale_ = 1;
  std::array<double, 3> theta_{};                 // a, b x byte_scale, c x frame_scale
  std::array<std::array<double, 3>, 3> p_{};      // covariance (in scaled units)
  double err_var_ = 0;                            // recent squared prediction error (EWMA)
  int run_ = 0, run_sign_ = 0;                    // consecutive large errors of one sign
  uint32_t seen_ = 0, resets_ = 0;                // batches given to update(); changes detected
};

class ProfileTable {
 public:
  static constexpr const char* kFormat = "tandem-schedule-table/1";
  static constexpr size_t kMaxEntries = 100000;
  static constexpr size_t kMaxDevices = 255;  // shard maps hold a device as uint8_t

  TableKey key;
  std::string energy_source;            // e.g. "gpu0: NVML total-energy counter; cpu: model 30 W + 5 W/core"
  std::vector<ProfileEntry> entries;    // shares/batches indexed like key.devices
  std::map<std::string, DeviceModel> models;
  // Per device of key.devices: measured / profiled throughput (absent: 1). An entry's health is the
  // least of its used devices' (share > 0): a split is as slow as its slowest part.
  std::map<std::string, double> device_health;

  // Loads a file written by save(). Throws std::runtime_error naming the file and the problem: not
  // a regular file (FIFO, device, folder), over 64 MiB, not JSON, wrong format tag, a missing field
  // or one of the wrong type, shares not summing to 1 within 1e-6, vector sizes not matching the
  // devices, negative or non-finite numbers, more than kMaxEntries entries.
  static ProfileTable load(const std::string& path);

  // Writes atomically: to path + ".tmp" in the same folder, fsync, rename (then fsyncs the folder),
  // so a crash leaves either the old file or the new one. Refuses (std::runtime_error) a table
  // load() would refuse, and throws std::runtime_error naming the file on any I/O failure.
  void save(const std::string& path) const;

  // Throws std::runtime_error(context + ": " + problem) when load() would refuse this table.
  void validate(const std::string& context) const;

  // True when the table was made for `k`; otherwise false and *why (if not null) says the first
  // difference ("made for app ipv4, this run is hashing").
  bool matches(const TableKey& k, std::string* why) const;

  // Koromilas step 1. Among entries whose capacity (mpps_max x health) is > 0 and at least
  // offered_mpps x (1 + margin), the best for the policy: energy, least joules_per_mbit at
  // offered_mpps of mean_frame_bytes frames (with no load or no frame size, least watts_idle);
  // latency, least p99_us; throughput, most capacity. Ties go to the larger capacity, then to the
  // earlier entry. If none sustains the load, the one with the most capacity. nullptr when empty.
  const ProfileEntry* best(Policy p, double offered_mpps, double mean_frame_bytes,
                           double margin = 0.10) const;

  // Cross-training: blends a measured point into the entry with the same batch sizes, shares
  // within 1e-6 and origin (a run's figures never move a profiled entry's): mpps_max, p99_us and
  // watts_max move by EWMA weight w (0 < w <= 1). Without such an entry the point is added, its health derived from device_health. Measurements should be in
  // profiled terms (a device's slowdown belongs in scale_device(), not in mpps_max). Throws
  // std::invalid_argument for a point of the wrong size or with bad numbers, std::length_error when
  // the table is full.
  void update(const ProfileEntry& measured, double w = 0.25);

  // A device measured at `ratio` x its profiled throughput (another process took part of it; 0: it
  // failed): sets device_health[device] = ratio (absolute, so repeating an observation is
  // idempotent) and recomputes every entry's health as the least device_health of the devices it
  // uses (share > 0). Throws std::invalid_argument for an unknown device or a negative/non-finite
  // ratio.
  void scale_device(const std::string& device, double ratio);
};

}  // namespace tandem::sched
