// `tandem run --schedule POLICY`: CPUs and GPUs together (sched/hetero.h). The flags, the device
// list, the controller, the energy sampler and the report lines, kept out of cmd_run.cc.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/forward_app.h"
#include "sched/hetero.h"
#include "sched/profile_table.h"

namespace tandem::sched {
class Controller;
class EnergySampler;
}  // namespace tandem::sched

namespace tandem::cli {

struct ScheduleFlags {
  std::string schedule;          // empty: not scheduled
  std::string controller = "model";  // or "koromilas"
  std::string rate_schedule;     // --rate-schedule "MS:MPPS,..."
  std::string table_file;        // --schedule-table FILE
  double tick_ms = 10;
  uint32_t cpu_batch = 256;
  uint32_t lane_queue = 8192;    // --lane-queue (HeteroConfig::lane_queue)
  std::string profile_splits;    // --profile-splits (empty: cli/schedule_profile.h's default_splits)
  double profile_seconds = 0.5;  // --profile-seconds
  // --controller koromilas: the profiled configurations to pick among; empty: prepare_profile()
  // takes them from --schedule-table or measures them.
  std::vector<sched::ProfileEntry> profile;
  double cpu_idle_watts = 30, cpu_core_watts = 5;
  std::vector<int> gpus;         // run's --gpus: what the device "gpu" stands for (empty: GPU 0)
};

// Adds --schedule, --controller, --schedule-table, --rate-schedule, --tick-ms, --cpu-batch, --lane-queue,
// --cpu-idle-watts and --cpu-core-watts to `run`.
void add_schedule_flags(CLI::App* run, ScheduleFlags& f);

// What --schedule needs besides the run's own flags, made from them: devices, controller, energy.
class ScheduledRun {
 public:
  // `device_list`: "auto", "cpu", "gpu" or a list such as "cpu:6,gpu" or "cpu:4,cpu:4,sim:20/0.05";
  // `cores`: --cores (dispatchers first, then the CPU groups' threads), may be empty. Throws
  // UsageError for what cannot run here (a GPU named where none is usable, ...).
  ScheduledRun(const ScheduleFlags& f, const std::string& device_list, const ForwardApp& app, int dispatchers,
               const std::vector<int>& cores, double rate_mpps);
  ~ScheduledRun();
  HeteroConfig& config() { return cfg_; }
  const std::string& note() const { return note_; }  // said before the run ("no GPU (...): ...")
  std::string describe() const;                     // for the "device:" line
  // --schedule-table: a table made by an earlier run of this app, table, traffic, machine, build and
  // device list gives the adaptive run its starting split (each device's measured capacity); any
  // other is left alone and rewritten after the run. A file that is not a table is an error.
  void use_table(const std::string& app, const std::string& app_table, const std::string& traffic);
  // --controller koromilas without profiled configurations given: true until prepare_profile().
  bool needs_profile() const { return needs_profile_; }
  // The profiling phase (Koromilas et al. 4.1): the profiled configurations of the table use_table()
  // matched, or else the grid measured now over `s` (written to --schedule-table at once); then
  // the Koromilas controller over them. After config()'s GPU ring options are final.
  void prepare_profile(const ForwardApp& app, const PacketStore& s);
  // Writes the run's measurements to --schedule-table (atomically); says what it wrote.
  void save_table(const HeteroResult& r, double seconds) const;
  void start_energy();
  void stop_energy();
  // The report lines after the usual ones, and the JSON's "schedule" and "energy".
  void print(const HeteroResult& r, double seconds) const;
  nlohmann::json json(const HeteroResult& r, double seconds) const;
  // Joules over every meter since start_energy (0 before), and the meters' sources in words.
  double energy_joules() const;
  double energy_watts() const;  // joules over the meters' span
  std::string energy_sources() const;

 private:
  ScheduleFlags f_;
  HeteroConfig cfg_;
  std::unique_ptr<sched::Controller> controller_;
  std::string controller_desc_;
  std::unique_ptr<sched::EnergySampler> energy_;
  std::vector<std::string> energy_sources_;
  std::string energy_tried_;
  std::vector<int> gpu_meter_;  // per device: index of its GPU's meter in the sampler, -1: none
  std::string note_;
  sched::TableKey key_;
  std::unique_ptr<sched::ProfileTable> prior_;  // the matching table the run started from
  std::string device_list_;
  std::vector<int> cores_;
  bool needs_profile_ = false;
};

// The parts of `s` between `sep`s, empty ones included.
std::vector<std::string> split_list(const std::string& s, char sep);
// `s` as a number from lo to hi; UsageError naming `what` otherwise.
double parse_number(const std::string& what, const std::string& s, double lo, double hi);

// Adds one window's run to `into` (a capture forwarded a window at a time).
void add_hetero(HeteroResult& into, const HeteroResult& r);

}  // namespace tandem::cli
