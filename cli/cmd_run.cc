// `tandem run`: forward packets from a capture or the generator through an app, on the CPU or the
// GPU, and account for every one of them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/ipv4/ipv4_forward.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "apps/ipv4/ref_trie.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/latency_histogram.h"
#include "gpu/offload.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct RunOptions {
  std::string app = "ipv4";
  std::string fib;
  std::string pcap;
  std::string gen;
  std::string out;
  std::string device = "auto";
  std::string cpu_path = "batched";
  uint64_t repeat = 1;
  uint32_t gpu_batch = 8192;
  std::string gpu_mode = "async";
  bool verify = false;
  std::string json;
};

// Ethernet preamble + start delimiter (8), FCS (4) and inter-frame gap (12): what a frame costs on
// the wire beyond its captured bytes, so Gbps figures compare with link rates.
constexpr uint64_t kWireOverhead = 24;

inline uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Everything that happens to a batch after its verdicts are final: verification, output (first
// pass only), accounting of wire bytes, and freeing the cells.
class BatchFinisher {
 public:
  BatchFinisher(PacketPool& pool, const ipv4::RefTrie* ref, PcapSink* sink, uint64_t first_pass)
      : pool_(pool), ref_(ref), sink_(sink), first_pass_(first_pass) {}

  // Records the latency of a batch whose verdicts are ready now; rx_ns is when it was received.
  void verdicts_ready(const PacketBatch& b, uint64_t rx_ns) { latency_.record(now_ns() - rx_ns, b.size); }

  void finish(PacketBatch& b) {
    if (ref_) {
      const auto t0 = std::chrono::steady_clock::now();
      verify(b);
      verify_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (sink_ && seen_ < first_pass_) {
      if (seen_ + b.size <= first_pass_) {
        sink_->tx_burst(pool_, b);
      } else {  // the batch straddles the end of the first pass: write only its head
        PacketBatch head = b;
        head.size = static_cast<uint32_t>(first_pass_ - seen_);
        sink_->tx_burst(pool_, head);
      }
    }
    for (uint32_t i = 0; i < b.size; ++i) wire_bytes_ += b.wire_len[i] + kWireOverhead;
    seen_ += b.size;
    pool_.free_bulk(b.cell.data(), b.size);
    b.clear();
  }

  static uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch()).count());
  }
  const LatencyHistogram& latency() const { return latency_; }
  uint64_t wire_bytes() const { return wire_bytes_; }
  uint64_t checked() const { return checked_; }
  uint64_t mismatches() const { return mismatches_; }
  // Time spent verifying, which the reported throughput excludes.
  double verify_seconds() const { return verify_seconds_; }

 private:
  // Every packet that reached the lookup (forwarded, or dropped for lack of a route) must carry
  // the reference trie's decision for its destination.
  void verify(const PacketBatch& b) {
    for (uint32_t i = 0; i < b.size; ++i) {
      const uint32_t v = b.verdict[i];
      if (Verdict::is_drop(v) && Verdict::reason(v) != DropReason::kNoRoute) continue;
      const uint32_t dst = load_be32(pool_.data(b.cell[i]) + b.l3_off[i] + 16);
      const uint32_t nh = ref_->lookup(dst);
      const uint32_t want = nh == ipv4::RefTrie::kNoRoute ? Verdict::drop(DropReason::kNoRoute) : Verdict::port(nh);
      ++checked_;
      mismatches_ += want != v;
    }
  }

  PacketPool& pool_;
  const ipv4::RefTrie* ref_;
  PcapSink* sink_;
  uint64_t first_pass_;
  uint64_t seen_ = 0;
  uint64_t wire_bytes_ = 0;
  uint64_t checked_ = 0;
  uint64_t mismatches_ = 0;
  double verify_seconds_ = 0;
  LatencyHistogram latency_;
};

PacketStore load_input(const RunOptions& o, const ipv4::Fib& fib, std::string* desc) {
  if (!o.pcap.empty()) {
    PacketStore s = load_pcap(o.pcap);
    *desc = o.pcap;
    return s;
  }
  const GenSpec spec = parse_gen_flag("--gen", o.gen);
  *desc = "generator " + format_gen_spec(spec);
  return generate(spec, prefixes_of(fib));
}

int run(const RunOptions& o) {
  const LoadedTable t = load_table(o.fib, false);
  std::string input_desc;
  const auto t_in = std::chrono::steady_clock::now();
  const PacketStore store = load_input(o, t.fib, &input_desc);
  std::printf("input: %s: %zu packets, %.1f MB, ready in %.2f s\n", input_desc.c_str(), store.size(),
              store.total_caplen() / 1e6,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t_in).count());
  if (store.size() == 0) throw UsageError(input_desc + ": no packets");

  const Device dev = choose_device(o.device, false);
  std::unique_ptr<ipv4::RefTrie> ref;
  if (o.verify) {
    ref = std::make_unique<ipv4::RefTrie>();
    for (const auto& r : t.fib.routes) ref->insert(r.prefix, r.len, r.next_hop);
  }
  std::unique_ptr<PcapSink> sink;
  if (!o.out.empty()) sink = std::make_unique<PcapSink>(o.out);

  // Cells hold the largest frame of the input whole (jumbo frames, GRO/TSO captures), so that no
  // frame is cut and then dropped as if it were malformed.
  uint32_t max_frame = 0;
  for (size_t i = 0; i < store.size(); ++i) max_frame = std::max(max_frame, store.caplen[i]);
  const uint32_t cell_size = std::max<uint32_t>(
      PacketPool::kDefaultCellSize, (std::min<uint32_t>(max_frame, 0xFFFF) + PacketPool::kHeadroom + 63) / 64 * 64);
  Counters c(size_t{t.fib.max_next_hop} + 1);
  ReplaySource src(store, o.repeat);
  std::string dev_desc;
  double seconds = 0;
  std::optional<BatchFinisher> fin;

  if (dev == Device::kCpu) {
    const bool scalar = o.cpu_path == "scalar";
    dev_desc = scalar ? "cpu (scalar: one packet at a time), 1 thread"
                      : "cpu (batched: tbl24 prefetched while the batch is parsed), 1 thread";
    PacketPool pool(2 * PacketBatch::kCapacity, cell_size);
    fin.emplace(pool, ref.get(), sink.get(), store.size());
    PacketBatch b;
    const auto t0 = std::chrono::steady_clock::now();
    while (src.rx_burst(pool, b) > 0) {
      const uint64_t rx_ns = BatchFinisher::now_ns();
      if (scalar) {
        ipv4::forward_scalar(*t.table, pool, b, c);
      } else {
        ipv4::forward_batched(*t.table, pool, b, c);
      }
      fin->verdicts_ready(b, rx_ns);
      fin->finish(b);
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } else {
    const gpu::DeviceInfo info = gpu::device_info();
    const uint32_t nb = std::max<uint32_t>(1, (o.gpu_batch + PacketBatch::kCapacity - 1) / PacketBatch::kCapacity);
    dev_desc = "gpu (" + info.name + "), " + o.gpu_mode + " mode, batches of " +
               std::to_string(nb * PacketBatch::kCapacity) + " packets, 1 worker thread";
    PacketPool pool((nb + 1) * PacketBatch::kCapacity, cell_size);
    fin.emplace(pool, ref.get(), sink.get(), store.size());
    std::vector<PacketBatch> batches(nb);
    std::vector<ipv4::KeyBatch> keys(nb);
    std::vector<uint32_t> offset(nb);
    std::vector<uint64_t> rx_ns(nb);
    ipv4::Ipv4GpuTable gtable(*t.table);
    gpu::OffloadOptions oo;
    oo.mode = gpu::parse_gpu_mode(o.gpu_mode);
    oo.capacity = size_t{nb} * PacketBatch::kCapacity;
    oo.slots = 1;
    const auto runner = gtable.make_runner(oo);
    auto* key_in = static_cast<uint32_t*>(runner->in(0));
    const auto* next_hop = static_cast<const uint32_t*>(runner->out(0));
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      uint32_t k = 0;
      while (k < nb && src.rx_burst(pool, batches[k]) > 0) rx_ns[k++] = BatchFinisher::now_ns();
      if (k == 0) break;
      uint32_t total = 0;
      for (uint32_t j = 0; j < k; ++j) {
        ipv4::classify(pool, batches[j], keys[j], c);
        std::copy_n(keys[j].key, keys[j].count, key_in + total);
        offset[j] = total;
        total += keys[j].count;
      }
      runner->run(total);
      for (uint32_t j = 0; j < k; ++j) {
        ipv4::apply(pool, batches[j], keys[j], next_hop + offset[j], c);
        fin->verdicts_ready(batches[j], rx_ns[j]);
      }
      // Verification and output come after every batch's verdict, so they never count as latency.
      for (uint32_t j = 0; j < k; ++j) fin->finish(batches[j]);
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (sink) sink->close();
  seconds -= fin->verify_seconds();

  const uint64_t rx = c.rx_packets, fwd = c.tx_packets, drop = c.dropped();
  const bool balanced = c.balanced() && rx == store.size() * o.repeat;
  const double mpps = rx / seconds / 1e6;
  const double gbps = fin->wire_bytes() * 8.0 / seconds / 1e9;
  std::printf("device: %s\n", dev_desc.c_str());
  std::printf("packets: received %llu, forwarded %llu, dropped %llu: accounting %s\n",
              static_cast<unsigned long long>(rx), static_cast<unsigned long long>(fwd),
              static_cast<unsigned long long>(drop), balanced ? "OK (received = forwarded + dropped)" : "MISMATCH");
  std::printf("throughput: %.2f Mpps, %.2f Gbps on the wire (+24 B/frame), %.3f s, %llu pass(es)%s\n",
              mpps, gbps, seconds, static_cast<unsigned long long>(o.repeat),
              o.verify ? " (time spent verifying excluded)" : "");
  std::printf("forwarded per port:");
  for (size_t p = 0; p < c.tx_per_port.size(); ++p) {
    if (c.tx_per_port[p]) std::printf(" %zu:%llu", p, static_cast<unsigned long long>(c.tx_per_port[p]));
  }
  std::printf("%s\ndropped per reason:", fwd ? "" : " none");
  for (int r = 1; r < kDropReasonCount; ++r) {
    if (c.drops[r]) std::printf(" %s:%llu", drop_reason_name(static_cast<DropReason>(r)), static_cast<unsigned long long>(c.drops[r]));
  }
  std::printf("%s\n", drop ? "" : " none");
  const LatencyHistogram& lat = fin->latency();
  std::printf("latency per packet, batch received to verdicts ready: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n",
              lat.percentile(0.5) / 1e3, lat.percentile(0.99) / 1e3, lat.percentile(0.999) / 1e3,
              lat.max() / 1e3);
  if (o.verify) {
    std::printf("verify: %llu lookup decisions checked against the reference trie: %llu differ\n",
                static_cast<unsigned long long>(fin->checked()), static_cast<unsigned long long>(fin->mismatches()));
  }
  if (sink) std::printf("output: %s: %llu packets\n", o.out.c_str(), static_cast<unsigned long long>(sink->written()));

  if (!o.json.empty()) {
    nlohmann::json drops = nlohmann::json::object();
    for (int r = 1; r < kDropReasonCount; ++r) drops[drop_reason_name(static_cast<DropReason>(r))] = c.drops[r];
    nlohmann::json ports = nlohmann::json::object();
    for (size_t p = 0; p < c.tx_per_port.size(); ++p) {
      if (c.tx_per_port[p]) ports[std::to_string(p)] = c.tx_per_port[p];
    }
    nlohmann::json report = {
        {"command", "run"}, {"app", o.app}, {"fib", o.fib}, {"routes", t.fib.routes.size()},
        {"input", input_desc}, {"repeat", o.repeat}, {"device", dev_desc},
        {"machine", bench::machine_json()},
        {"received", rx}, {"forwarded", fwd}, {"dropped", drop}, {"balanced", balanced},
        {"drops", drops}, {"forwarded_per_port", ports}, {"seconds", seconds}, {"mpps", mpps},
        {"gbps_wire", gbps},
        {"latency_ns", {{"p50", lat.percentile(0.5)}, {"p99", lat.percentile(0.99)},
                        {"p999", lat.percentile(0.999)}, {"max", lat.max()}, {"min", lat.min()}}}};
    if (o.verify) report["verify"] = {{"checked", fin->checked()}, {"mismatches", fin->mismatches()}};
    bench::write_json(o.json, report);
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) throw UsageError("cannot write to standard output");
  if (!balanced) return 3;
  if (o.verify && fin->mismatches()) return 4;
  return 0;
}

}  // namespace

void register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* c = app.add_subcommand("run", "forward packets through an app and account for each of them");
  c->add_option("--app", o->app, "application")->capture_default_str()->check(CLI::IsMember({"ipv4"}));
  c->add_option("--fib", o->fib, "forwarding table (PREFIX/LEN [NEXTHOP] per line, .gz ok)")
      ->required()->check(CLI::ExistingFile);
  auto* pcap = c->add_option("--pcap", o->pcap, "input capture (pcap or pcapng, Ethernet)")->check(CLI::ExistingFile);
  auto* gen = c->add_option("--gen", o->gen,
                            "generated input, e.g. count=1000000,dst=fib,flows=10000,zipf=1.1,size=imix,proto=udp,seed=1");
  pcap->excludes(gen);
  gen->excludes(pcap);
  c->add_option("--out", o->out, "write forwarded packets here (.pcap or .pcapng; first pass only)");
  c->add_option("--device", o->device, "cpu, gpu, or auto (the GPU when one is usable)")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  c->add_option("--cpu-path", o->cpu_path, "scalar (one packet at a time) or batched (tbl24 prefetched while the batch is parsed)")
      ->capture_default_str()->check(CLI::IsMember({"scalar", "batched"}));
  c->add_option("--repeat", o->repeat, "passes over the input, replayed from memory")
      ->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  c->add_option("--gpu-batch", o->gpu_batch, "packets per GPU lookup batch")
      ->capture_default_str()->check(CLI::Range(1u, 1u << 22));
  c->add_option("--gpu-mode", o->gpu_mode,
                 "how batches reach the GPU: async (copies on streams), graph (CUDA graph), mapped "
                 "(zero-copy), persistent (resident kernel, no launches)")
      ->capture_default_str()->check(CLI::IsMember({"async", "graph", "mapped", "persistent"}));
  c->add_flag("--verify", o->verify, "check every lookup decision against the reference trie");
  c->add_option("--json", o->json, "write a JSON summary here");
  c->callback([o] {
    if (o->pcap.empty() && o->gen.empty()) throw UsageError("run: give an input: --pcap FILE or --gen SPEC");
    const int rc = run(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
