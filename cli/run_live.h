// `tandem run --rx PORTS [--tx PORTS]`: forwarding between live network ports, as a service. The
// ports' flags, the receive and transmit ends of each worker (io/af_packet.h), the stats line and
// JSON lines while it runs, and its report lines, kept out of cmd_run.cc, which runs every input.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "apps/forward_app.h"
#include "apps/table_control.h"
#include "io/af_packet.h"
#include "io/dpdk_port.h"
#include "sched/resident.h"
#include "sched/workers.h"

namespace tandem::cli {

struct LiveFlags {
  std::string rx;           // BACKEND:IF[,IF...]
  std::string tx;
  std::string tx_dst_mac;   // rewrite the Ethernet destination (and source) of what leaves
  double duration_s = 0;    // 0: until the packet count or a signal
  std::string stats = "auto";  // the stats line on stderr: auto (when it is a terminal), on, off
  std::string stats_json;   // a JSON line of the same figures every second, to this file
  double stats_interval_s = 1;
  std::string metrics;      // HOST:PORT of the Prometheus endpoint
  std::string dpdk;         // the EAL's arguments, for dpdk: ports
};

// Adds --rx, --tx, --tx-dst-mac, --duration, --stats, --stats-json, --stats-interval, --metrics,
// --dpdk to `run`.
void add_live_flags(CLI::App* run, LiveFlags& f);

// A port list: the backend and its interfaces. Throws UsageError naming the flag.
struct PortSpec {
  std::string backend;  // af_packet, af_xdp, dpdk
  std::vector<std::string> interfaces;
};
PortSpec parse_port_spec(const char* flag, const std::string& spec);

// Opens --tx's ports for `workers` workers (one sink each), with --tx-dst-mac's rewrite; `desc`
// gets them in words. dpdk: ports are those of `dpdk` (started with the receive ports), or started
// here with --dpdk's arguments. UsageError for a bad spec, interface or MAC.
std::vector<std::unique_ptr<PacketSink>> open_tx_ports(const LiveFlags& f, int workers, std::string* desc,
                                                       std::shared_ptr<DpdkPorts> dpdk = nullptr);

// Frames the --tx sinks have sent so far.
uint64_t frames_sent(const std::vector<std::unique_ptr<PacketSink>>& sinks);

// The live ports of one run: every worker's receive queue and transmit queue, opened up front so
// that a missing interface or permission is reported before anything runs.
class LiveRun {
 public:
  // `packets`: stop once this many have been received (0: no count).
  LiveRun(const LiveFlags& f, int workers, uint64_t packets);
  ~LiveRun();

  const std::string& describe() const { return desc_; }
  // The pool cell size the ports' largest frame needs (their MTU).
  uint32_t cell_size() const { return cell_size_; }
  // Runs the workers on the ports until the count, the duration or a signal; prints the stats
  // line while it runs when asked.
  WorkersResult run(const ForwardApp& app, WorkersConfig wc, PacketSink* out);
  // The same through the resident path: receive thread t takes worker t's ports.
  ResidentResult run_resident(const ForwardApp& app, ResidentConfig rc, PacketSink* out);
  // The table whose version the metrics show (live updates), if any.
  void set_control(const TableControl* control) { control_ = control; }
  // Report lines and JSON: what the kernel dropped before Tandem saw it, what was sent.
  void print() const;
  nlohmann::json json() const;

 private:
  LiveFlags flags_;
  int workers_;
  uint64_t packets_;
  std::vector<InterfaceInfo> rx_if_;
  std::shared_ptr<DpdkPorts> dpdk_;  // dpdk: ports, shared by the sources and sinks
  std::vector<std::unique_ptr<PacketSource>> sources_;
  std::vector<std::unique_ptr<PacketSink>> sinks_;
  std::string desc_;
  uint32_t cell_size_ = 0;
  // Runs `run` with the stats line, the JSON lines and the metrics endpoint reading `progress`.
  template <class Run>
  WorkersResult watch(const ForwardApp& app, const std::string& device, std::vector<WorkerProgress>& progress, Run run);
  uint64_t kernel_drops_now();  // the sources' kernel drops so far
  uint64_t sent_now() const;    // frames the sinks have sent so far
  uint64_t kernel_drops_ = 0;   // at the end of the run
  std::mutex kernel_mutex_;     // the sources' kernel figures: the stats thread and the metrics endpoint read them
  const TableControl* control_ = nullptr;
  uint64_t sent_ = 0;
};

}  // namespace tandem::cli
