#include "cli/run_live.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/metrics_server.h"
#include "core/clock.h"
#include "core/packet_pool.h"
#include "io/af_xdp.h"
#include "io/io_error.h"

namespace tandem::cli {

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The interface's receive queues (its rx-N entries in sysfs); 1 when sysfs does not say.
int receive_queues(const std::string& ifname) {
  DIR* d = opendir(("/sys/class/net/" + ifname + "/queues").c_str());
  if (!d) return 1;
  int n = 0;
  while (const dirent* e = readdir(d)) n += std::strncmp(e->d_name, "rx-", 3) == 0;
  closedir(d);
  return std::max(n, 1);
}

// A fanout group id of this process's own, so that two runs on one host do not join each other's
// groups (which would split one run's traffic with the other).
int fanout_group_base() { return static_cast<int>((getpid() * 16) & 0xFFFF); }

}  // namespace

void add_live_flags(CLI::App* c, LiveFlags& f) {
  c->add_option("--rx", f.rx,
                "receive from live ports instead of --pcap/--gen: af_packet:IF[,IF...] (one socket per worker and "
                "interface, TPACKET_V3 ring, fanout by flow hash), af_xdp:IF[,IF...] (worker w on receive queue w, "
                "zero-copy where the driver allows, else copy mode) or dpdk:PORT[,PORT...] (DPDK ethdev, --dpdk; "
                "worker w on queue w)");
  c->add_option("--tx", f.tx,
                "send what the app forwards out of these ports: af_packet:IF[,IF...], af_xdp:IF[,IF...] or dpdk:PORT[,PORT...] (port p of the app leaves through "
                "the (p mod N)-th interface); without it, forwarded packets are counted (and written to --out) only");
  c->add_option("--tx-dst-mac", f.tx_dst_mac,
                "--tx: give each frame that leaves this Ethernet destination (the next hop's MAC) and the output "
                "interface's MAC as its source, as a router does; without it frames leave with the MACs they came with");
  c->add_option("--duration", f.duration_s,
                "stop receiving after this many seconds, finish what is in flight and report (0: no limit)")
      ->check(FiniteRange(0.0, 1e9));
  c->add_option("--stats", f.stats, "a stats line every interval on standard error: auto (when it is a terminal), on, off")
      ->capture_default_str()->check(CLI::IsMember({"auto", "on", "off"}));
  c->add_option("--stats-json", f.stats_json,
                "append a JSON line of the same figures every interval to this file (- for standard output)");
  c->add_option("--stats-interval", f.stats_interval_s, "seconds between stats lines")
      ->capture_default_str()->check(FiniteRange(0.01, 3600.0));
  c->add_option("--dpdk", f.dpdk,
                "start DPDK's EAL with these arguments for dpdk:PORT ports (PORT: a port id or device name), e.g. "
                "\"--no-huge --no-pci -m 512 --no-shconf --vdev net_memif0,role=server\"");
  c->add_option("--metrics", f.metrics,
                "serve the run's counters in the Prometheus text format at http://HOST:PORT/metrics, e.g. "
                "127.0.0.1:9100 (per worker: received, forwarded, dropped, wire bytes, latency; the kernel's ring "
                "drops; frames sent; the table version)");
}

PortSpec parse_port_spec(const char* flag, const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos || colon + 1 >= spec.size()) {
    throw UsageError(std::string(flag) + " " + spec + ": expected BACKEND:IF[,IF...], e.g. af_packet:eth1");
  }
  PortSpec p;
  p.backend = spec.substr(0, colon);
  if (p.backend != "af_packet" && p.backend != "af_xdp" && p.backend != "dpdk") {
    throw UsageError(std::string(flag) + " " + spec + ": backend '" + p.backend +
                     "' is not one this build has (af_packet, af_xdp, dpdk)");
  }
  if (p.backend == "dpdk" && !dpdk_ports_available()) {
    throw UsageError(std::string(flag) + " " + spec + ": this build has no DPDK ports (scripts/fetch-dpdk.sh, then "
                     "rebuild)");
  }
  if (p.backend == "af_xdp" && !af_xdp_available()) {
    throw UsageError(std::string(flag) + " " + spec + ": this build has no AF_XDP (install libxdp-dev and libbpf-dev, "
                     "then rebuild)");
  }
  p.interfaces = split_commas(spec.substr(colon + 1));
  std::vector<std::string> seen = p.interfaces;
  std::sort(seen.begin(), seen.end());
  for (const std::string& i : p.interfaces) {
    if (i.empty()) throw UsageError(std::string(flag) + " " + spec + ": an empty interface name");
  }
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) {
    throw UsageError(std::string(flag) + " " + spec + ": an interface is named twice");
  }
  return p;
}

std::vector<std::unique_ptr<PacketSink>> open_tx_ports(const LiveFlags& f, int workers, std::string* desc,
                                                       std::shared_ptr<DpdkPorts> dpdk) {
  const std::string& spec = f.tx;
  const std::string& dst_mac = f.tx_dst_mac;
  const PortSpec tx = parse_port_spec("--tx", spec);
  L2Rewrite rewrite;
  if (!dst_mac.empty()) {
    try {
      rewrite.dst = parse_mac(dst_mac);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--tx-dst-mac ") + e.what());
    }
    rewrite.enabled = true;
  }
  std::vector<std::unique_ptr<PacketSink>> sinks;
  try {
    std::vector<InterfaceInfo> ifs;
    if (tx.backend == "dpdk") {
      if (!dpdk) dpdk = std::make_shared<DpdkPorts>(f.dpdk, tx.interfaces, workers);
    } else {
      for (const std::string& i : tx.interfaces) ifs.push_back(interface_info(i));
    }
    for (int w = 0; w < workers; ++w) {
      if (tx.backend == "dpdk") {
        sinks.push_back(std::make_unique<DpdkTx>(dpdk, tx.interfaces, w, rewrite));
      } else if (tx.backend == "af_xdp") {
        sinks.push_back(std::make_unique<AfXdpTx>(ifs, static_cast<uint32_t>(w), rewrite));
      } else {
        sinks.push_back(std::make_unique<AfPacketTx>(ifs, rewrite));
      }
    }
  } catch (const IoError& e) {
    throw UsageError(e.what());
  }
  *desc = "out through " + spec + (rewrite.enabled ? " (to " + dst_mac + ")" : "");
  if (dpdk) {
    for (const std::string& n : tx.interfaces) {
      if (!dpdk->port(n).link_up) *desc += " (" + n + ": link down)";
    }
  }
  return sinks;
}

LiveRun::LiveRun(const LiveFlags& f, int workers, uint64_t packets) : flags_(f), workers_(workers), packets_(packets) {
  const PortSpec rx = parse_port_spec("--rx", f.rx);
  if (!f.tx.empty()) {
    const PortSpec tx = parse_port_spec("--tx", f.tx);
    for (const std::string& i : tx.interfaces) {
      if (rx.backend == "af_xdp" && tx.backend == "af_xdp" &&
          std::find(rx.interfaces.begin(), rx.interfaces.end(), i) != rx.interfaces.end()) {
        throw UsageError("--rx and --tx af_xdp:" + i + ": one interface both ways takes a shared UMEM, which this "
                         "backend does not set up; use af_packet for it");
      }
    }
  }
  try {
    if (rx.backend == "dpdk") {
      // One set of DPDK ports for both ends: each port is configured once, with every worker's queues.
      std::vector<std::string> names = rx.interfaces;
      if (!f.tx.empty()) {
        const PortSpec tx = parse_port_spec("--tx", f.tx);
        if (tx.backend == "dpdk") names.insert(names.end(), tx.interfaces.begin(), tx.interfaces.end());
      }
      dpdk_ = std::make_shared<DpdkPorts>(f.dpdk, names, workers);
    } else {
      for (const std::string& i : rx.interfaces) rx_if_.push_back(interface_info(i));
    }
  } catch (const IoError& e) {
    throw UsageError(e.what());
  }
  // AF_XDP takes one receive queue per worker; libxdp's program hands the frames of queues no
  // socket is bound to to the kernel's stack, where Tandem would neither see nor count them.
  if (rx.backend == "af_xdp") {
    for (const InterfaceInfo& i : rx_if_) {
      const int queues = receive_queues(i.name);
      if (queues > workers) {
        throw UsageError("--rx af_xdp:" + i.name + ": the interface has " + std::to_string(queues) +
                         " receive queues and each needs a worker: use --workers " + std::to_string(queues) +
                         " (or give it fewer queues: ethtool -L " + i.name + " combined N)");
      }
    }
  }
  // Cells hold the largest frame the receive interfaces pass: their MTU, the Ethernet header and
  // two VLAN tags.
  uint32_t mtu = 1500;
  for (const InterfaceInfo& i : rx_if_) mtu = std::max(mtu, i.mtu);
  if (dpdk_) {
    for (const std::string& i : rx.interfaces) mtu = std::max(mtu, dpdk_->port(i).mtu);
  }
  cell_size_ = std::max<uint32_t>(PacketPool::kDefaultCellSize,
                                  (std::min<uint32_t>(mtu + 22, 0xFFFF) + PacketPool::kHeadroom + 63) / 64 * 64);
  AfPacketRxOptions ro;
  ro.fanout_group = fanout_group_base();
  try {
    for (int w = 0; w < workers; ++w) {
      if (rx.backend == "dpdk") {
        sources_.push_back(std::make_unique<DpdkRx>(dpdk_, rx.interfaces, w));
      } else if (rx.backend == "af_xdp") {
        sources_.push_back(std::make_unique<AfXdpRx>(rx_if_, static_cast<uint32_t>(w)));
      } else {
        sources_.push_back(std::make_unique<AfPacketRx>(rx_if_, ro));
      }
    }
  } catch (const IoError& e) {
    throw UsageError(e.what());
  }
  desc_ = sources_.front()->describe() + ", " + std::to_string(workers) + " queue(s)";
  if (!f.tx.empty()) {
    std::string tx_desc;
    sinks_ = open_tx_ports(f, workers, &tx_desc, dpdk_);
    desc_ += "; " + tx_desc;
  }
  std::string until;
  if (packets) until = std::to_string(packets) + " packets";
  if (f.duration_s > 0) {
    char d[32];
    std::snprintf(d, sizeof d, "%g s", f.duration_s);
    until += (until.empty() ? "" : " or ") + std::string(d);
  }
  desc_ += "; until " + (until.empty() ? std::string("a signal") : until + " or a signal");
}

LiveRun::~LiveRun() = default;

uint64_t LiveRun::kernel_drops_now() {
  std::lock_guard<std::mutex> lock(kernel_mutex_);
  uint64_t drops = 0;
  for (auto& s : sources_) {
    if (auto* p = dynamic_cast<AfPacketRx*>(s.get())) drops += p->kernel_stats().drops;
    if (auto* x = dynamic_cast<AfXdpRx*>(s.get())) drops += x->kernel_stats().dropped;
  }
  if (dpdk_) {
    const DpdkPorts::Stats st = dpdk_->stats(parse_port_spec("--rx", flags_.rx).interfaces);
    drops += st.missed + st.no_mbuf + st.errors;
  }
  return drops;
}

uint64_t frames_sent(const std::vector<std::unique_ptr<PacketSink>>& sinks) {
  uint64_t sent = 0;
  for (const auto& s : sinks) {
    if (auto* p = dynamic_cast<const AfPacketTx*>(s.get())) sent += p->sent();
    if (auto* x = dynamic_cast<const AfXdpTx*>(s.get())) sent += x->sent();
    if (auto* d = dynamic_cast<const DpdkTx*>(s.get())) sent += d->sent();
  }
  return sent;
}

uint64_t LiveRun::sent_now() const { return frames_sent(sinks_); }

template <class Run>
WorkersResult LiveRun::watch(const ForwardApp& app, const std::string& device, std::vector<WorkerProgress>& progress,
                             Run run) {
  const bool line = flags_.stats == "on" || (flags_.stats == "auto" && isatty(STDERR_FILENO));
  FILE* json = nullptr;
  if (flags_.stats_json == "-") {
    json = stdout;
  } else if (!flags_.stats_json.empty()) {
    json = std::fopen(flags_.stats_json.c_str(), "a");
    if (!json) throw UsageError("--stats-json " + flags_.stats_json + ": cannot open it for appending");
  }
  std::unique_ptr<MetricsServer> metrics;
  if (!flags_.metrics.empty()) {
    const uint64_t t0 = now_ns();
    const std::string app_name = app.name();
    metrics = std::make_unique<MetricsServer>(flags_.metrics, [this, &progress, t0, device, app_name] {
      std::string out;
      auto per_worker = [&](const char* name, const char* type, const char* help, auto field, double scale = 1) {
        std::vector<MetricSample> s;
        for (size_t w = 0; w < progress.size(); ++w) {
          s.push_back({"worker=\"" + std::to_string(w) + "\"", double((progress[w].*field).load(std::memory_order_relaxed)) * scale});
        }
        append_metric(out, name, type, help, s);
      };
      append_metric(out, "tandem_info", "gauge", "The run: app and device.",
                    {{"app=\"" + app_name + "\",device=\"" + device + "\"", 1}});
      append_metric(out, "tandem_uptime_seconds", "gauge", "Seconds since the workers started.", {{"", (now_ns() - t0) / 1e9}});
      per_worker("tandem_received_packets_total", "counter", "Packets a worker received.", &WorkerProgress::received);
      per_worker("tandem_forwarded_packets_total", "counter", "Packets a worker forwarded (sent).", &WorkerProgress::forwarded);
      per_worker("tandem_dropped_packets_total", "counter", "Packets a worker dropped, for any reason.", &WorkerProgress::dropped);
      per_worker("tandem_wire_bytes_total", "counter", "Bytes received, with 24 bytes of Ethernet overhead per frame.",
                 &WorkerProgress::wire_bytes);
      per_worker("tandem_latency_seconds_sum", "counter", "Receipt to verdict, summed over the packets.",
                 &WorkerProgress::latency_ns, 1e-9);
      per_worker("tandem_latency_packets_total", "counter", "Packets in tandem_latency_seconds_sum.",
                 &WorkerProgress::latency_packets);
      const uint64_t drops = kernel_drops_now();
      append_metric(out, "tandem_kernel_ring_drops_total", "counter",
                    "Packets the kernel dropped before a worker saw them (receive rings full).", {{"", double(drops)}});
      uint64_t sent = 0;
      sent = sent_now();
      append_metric(out, "tandem_sent_frames_total", "counter", "Frames sent through --tx.", {{"", double(sent)}});
      if (control_) {
        append_metric(out, "tandem_table_version", "gauge", "Table updates applied (tandem ctl).",
                      {{"", double(control_->version())}});
      }
      return out;
    });
  }
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  // Samples the workers' published figures every interval: rates over the interval, totals, and
  // the kernel's ring drops (packets that reached the interface but not a worker).
  std::thread monitor([&] {
    const auto interval = std::chrono::duration<double>(flags_.stats_interval_s);
    const uint64_t t0 = now_ns();
    uint64_t last_t = t0, last_rx = 0, last_fwd = 0, last_bytes = 0, last_lat = 0, last_latn = 0;
    std::unique_lock<std::mutex> lock(m);
    // Every interval, and once more at the end (the run's last figures).
    for (bool last = false; !last;) {
      last = cv.wait_for(lock, interval, [&] { return done; });
      uint64_t rx = 0, fwd = 0, drop = 0, bytes = 0, lat = 0, latn = 0;
      for (const WorkerProgress& p : progress) {
        rx += p.received.load(std::memory_order_relaxed);
        fwd += p.forwarded.load(std::memory_order_relaxed);
        drop += p.dropped.load(std::memory_order_relaxed);
        bytes += p.wire_bytes.load(std::memory_order_relaxed);
        lat += p.latency_ns.load(std::memory_order_relaxed);
        latn += p.latency_packets.load(std::memory_order_relaxed);
      }
      const uint64_t kernel_drops = kernel_drops_now();
      const uint64_t t = now_ns();
      const double dt = (t - last_t) / 1e9;
      const double pps = (rx - last_rx) / dt, fwd_pps = (fwd - last_fwd) / dt;
      const double gbps = (bytes - last_bytes) * 8.0 / dt / 1e9;
      const double lat_us = latn > last_latn ? double(lat - last_lat) / double(latn - last_latn) / 1e3 : 0.0;
      if (line) {
        std::fprintf(stderr,
                     "[%7.1f s] rx %.3f Mpps %.2f Gbps, fwd %.3f Mpps | total rx %llu fwd %llu drop %llu, "
                     "kernel ring drops %llu | latency mean %.1f us | %s\n",
                     (t - t0) / 1e9, pps / 1e6, gbps, fwd_pps / 1e6, static_cast<unsigned long long>(rx),
                     static_cast<unsigned long long>(fwd), static_cast<unsigned long long>(drop),
                     static_cast<unsigned long long>(kernel_drops), lat_us,
                     device == "gpu" ? "gpu 100%" : "cpu 100%");
      }
      if (json) {
        const nlohmann::json j = {{"t", (t - t0) / 1e9},         {"received", rx},
                                  {"forwarded", fwd},            {"dropped", drop},
                                  {"rx_pps", pps},               {"forwarded_pps", fwd_pps},
                                  {"gbps_wire", gbps},           {"kernel_ring_drops", kernel_drops},
                                  {"latency_us_mean", lat_us},   {"device", device},
                                  {"final", last}};
        std::fprintf(json, "%s\n", j.dump().c_str());
        std::fflush(json);
      }
      last_t = t, last_rx = rx, last_fwd = fwd, last_bytes = bytes, last_lat = lat, last_latn = latn;
    }
  });
  WorkersResult r;
  try {
    r = run();
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(m);
      done = true;
    }
    cv.notify_all();
    monitor.join();
    if (json && json != stdout) std::fclose(json);
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_all();
  monitor.join();
  if (json && json != stdout) std::fclose(json);
  metrics.reset();
  kernel_drops_ = kernel_drops_now();
  sent_ = sent_now();
  return r;
}

WorkersResult LiveRun::run(const ForwardApp& app, WorkersConfig wc, PacketSink* out) {
  wc.packets = packets_;
  wc.duration_ns = static_cast<uint64_t>(flags_.duration_s * 1e9);
  wc.cell_size = std::max(wc.cell_size, cell_size_);
  wc.sink = sinks_.empty() ? out : nullptr;
  std::vector<WorkerProgress> progress(workers_);
  wc.progress = progress.data();
  const char* device = wc.path == LookupPath::kGpu ? "gpu" : "cpu";
  return watch(app, device, progress, [&] { return run_workers_live(app, sources_, sinks_, wc); });
}

ResidentResult LiveRun::run_resident(const ForwardApp& app, ResidentConfig rc, PacketSink* out) {
  rc.packets = packets_;
  rc.duration_ns = static_cast<uint64_t>(flags_.duration_s * 1e9);
  rc.ring.cell_size = std::max(rc.ring.cell_size, cell_size_);
  rc.sink = sinks_.empty() ? out : nullptr;
  std::vector<WorkerProgress> progress(workers_);
  rc.progress = progress.data();
  ResidentResult res;
  res.run = watch(app, rc.cpu ? "cpu" : "gpu", progress, [&] {
    res = run_resident_live(app, sources_, sinks_, rc);
    return res.run;
  });
  return res;
}

void LiveRun::print() const {
  std::printf("live ports: %s dropped %llu packets before a worker saw them (receive rings full); %s\n",
              dpdk_ ? "the ports" : "the kernel", static_cast<unsigned long long>(kernel_drops_),
              sinks_.empty() ? "nothing sent (no --tx)"
                             : ("sent " + std::to_string(sent_) + " frames through --tx").c_str());
}

nlohmann::json LiveRun::json() const {
  nlohmann::json j = {{"kernel_ring_drops", kernel_drops_}, {"rx", flags_.rx}};
  if (!sinks_.empty()) {
    j["tx"] = flags_.tx;
    j["sent"] = sent_;
  }
  return j;
}

}  // namespace tandem::cli
