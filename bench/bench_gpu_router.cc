// `tandem bench gpu-router`: the GPU-router report's iterations for IPv4 forwarding, one thread
// driving the GPU (as the report did), 64-byte packets:
//   1 whole packets:  each frame goes to the GPU, which parses, validates, looks up and rewrites
//                     it (apps/ipv4/ipv4_frame_core.h), and comes back whole;
//   2 headers only:   the CPU parses and classifies, only the 4-byte destinations go over, next
//                     hops come back, the CPU rewrites;
//   3 mapped memory:  as 2, but the kernel reads and writes host memory: no copies;
//   4 streams:        as 2, with several batches in flight, so that the CPU's work on one batch
//                     overlaps the GPU's on the others;
// and, beyond the report, CUDA graphs and a persistent kernel with streams. Throughput is packets
// per second through the whole loop; latency is per batch, from the start of its gathering to its
// last verdict. Before timing, each iteration's verdicts and rewritten bytes are checked against
// the CPU scalar path on the same packets.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "apps/ipv4/ipv4_gpu.h"
#include "bench/bench_report.h"
#include "bench/variants/ipv4_forward.h"
#include "bench/variants/ipv4_gpu_variants.h"
#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/clock.h"
#include "core/flow_hash.h"
#include "io/packet_source.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct GpuRouterOptions {
  std::string fib;
  std::string gen = "count=1000000,dst=fib,flows=100000,zipf=1.1,size=64,seed=3";
  uint32_t batch = 8192;
  int slots = 4;
  uint64_t repeat = 4;
  int reps = 3;
  std::string json;
};

struct Iteration {
  std::string name;
  bool whole;
  gpu::GpuMode mode;
  int slots;
};

using Digest = bench::FrameDigest;

struct IterationResult {
  double pps = 0;
  std::vector<double> rates;
  std::vector<uint64_t> batch_ns;  // of the last repetition
  Digest digest;                   // of the checking pass
};

// One pass over the input through `r`: gathers up to `batch` packets per slot, submits, and
// finishes a slot's packets when the slot comes round again.
class RouterLoop {
 public:
  RouterLoop(const Iteration& it, gpu::OffloadRunner& r, uint32_t batch, uint32_t cell_size, Counters& c)
      : it_(it), r_(r), nb_((batch + PacketBatch::kCapacity - 1) / PacketBatch::kCapacity),
        pool_((r.slots() * nb_ + 1) * PacketBatch::kCapacity, cell_size), c_(c), slot_(r.slots()) {
    for (auto& s : slot_) {
      s.batches.resize(nb_);
      s.dsts.resize(nb_);
    }
  }

  void run(const PacketStore& store, uint64_t repeat, Digest* digest, std::vector<uint64_t>* batch_ns) {
    ReplaySource src(store, repeat);
    digest_ = digest;
    batch_ns_ = batch_ns;
    uint64_t k = 0;
    for (;; ++k) {
      const int s = static_cast<int>(k % slot_.size());
      finish(s);
      if (!gather(s, src)) break;
    }
    // The slots still out, oldest first (the one after slot k): finishing them in slot order
    // would put the packets out of input order whenever the input's batches do not end on the
    // last slot, and the digest would differ from the CPU's.
    for (uint64_t j = 1; j <= slot_.size(); ++j) finish(static_cast<int>((k + j) % slot_.size()));
  }

 private:
  struct Slot {
    std::vector<PacketBatch> batches;
    std::vector<ipv4::DestinationBatch> dsts;
    uint32_t used = 0;  // batches holding packets
    uint32_t n = 0;     // items submitted
    uint64_t start_ns = 0;
  };

  bool gather(int s, ReplaySource& src) {
    Slot& sl = slot_[s];
    sl.start_ns = now_ns();
    sl.used = 0;
    sl.n = 0;
    while (sl.used < nb_ && src.rx_burst(pool_, sl.batches[sl.used]) > 0) ++sl.used;
    if (sl.used == 0) return false;
    if (it_.whole) {
      auto* cells = static_cast<ipv4::FrameCell*>(r_.in(s));
      for (uint32_t j = 0; j < sl.used; ++j) {
        const PacketBatch& b = sl.batches[j];
        for (uint32_t i = 0; i < b.size; ++i) {
          ipv4::FrameCell& cell = cells[sl.n++];
          const uint32_t len = std::min<uint32_t>(b.len[i], sizeof cell.frame);
          std::memcpy(cell.frame, pool_.data(b.cell[i]), len);
          cell.meta = len;
        }
      }
    } else {
      auto* keys = static_cast<uint32_t*>(r_.in(s));
      for (uint32_t j = 0; j < sl.used; ++j) {
        ipv4::classify(pool_, sl.batches[j], sl.dsts[j], c_);
        std::memcpy(keys + sl.n, sl.dsts[j].dst, sl.dsts[j].count * sizeof(uint32_t));
        sl.n += sl.dsts[j].count;
      }
    }
    r_.submit(s, sl.n);
    return true;
  }

  void finish(int s) {
    Slot& sl = slot_[s];
    if (sl.used == 0) return;
    r_.wait(s);
    if (it_.whole) {
      const auto* cells = static_cast<const ipv4::FrameCell*>(r_.out(s));
      uint32_t k = 0;
      for (uint32_t j = 0; j < sl.used; ++j) {
        PacketBatch& b = sl.batches[j];
        for (uint32_t i = 0; i < b.size; ++i, ++k) {
          const uint32_t v = cells[k].meta;
          std::memcpy(pool_.data(b.cell[i]), cells[k].frame, std::min<uint32_t>(b.len[i], sizeof cells[k].frame));
          b.verdict[i] = v;
          ++c_.rx_packets;
          if (Verdict::is_drop(v)) {
            c_.drop(Verdict::reason(v));
          } else {
            ++c_.tx_packets;
          }
        }
      }
    } else {
      const auto* next_hop = static_cast<const uint32_t*>(r_.out(s));
      uint32_t off = 0;
      for (uint32_t j = 0; j < sl.used; ++j) {
        ipv4::apply(pool_, sl.batches[j], sl.dsts[j], next_hop + off, c_);
        off += sl.dsts[j].count;
      }
    }
    if (batch_ns_) batch_ns_->push_back(now_ns() - sl.start_ns);
    for (uint32_t j = 0; j < sl.used; ++j) {
      PacketBatch& b = sl.batches[j];
      if (digest_) {
        for (uint32_t i = 0; i < b.size; ++i) digest_->add(pool_.data(b.cell[i]), b.len[i], b.verdict[i]);
      }
      pool_.free_bulk(b.cell.data(), b.size);
      b.clear();
    }
    sl.used = 0;
  }

  const Iteration& it_;
  gpu::OffloadRunner& r_;
  uint32_t nb_;
  PacketPool pool_;
  Counters& c_;
  std::vector<Slot> slot_;
  Digest* digest_ = nullptr;
  std::vector<uint64_t>* batch_ns_ = nullptr;
};

Digest cpu_digest(const ipv4::Dir24_8& table, const PacketStore& store) {
  PacketPool pool(PacketBatch::kCapacity, PacketPool::kDefaultCellSize);
  ReplaySource src(store, 1);
  Counters c(64);
  Digest d;
  PacketBatch b;
  while (src.rx_burst(pool, b) > 0) {
    ipv4::forward_scalar(table, pool, b, c);
    for (uint32_t i = 0; i < b.size; ++i) d.add(pool.data(b.cell[i]), b.len[i], b.verdict[i]);
    pool.free_bulk(b.cell.data(), b.size);
    b.clear();
  }
  return d;
}

double pct(std::vector<uint64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))] / 1e3;
}

int run_bench(const GpuRouterOptions& o) {
  std::string why;
  if (!gpu::available(&why)) throw UsageError("bench gpu-router needs a GPU: " + why);
  const LoadedTable t = load_table(o.fib, true);
  const GenSpec spec = parse_gen_flag("--gen", o.gen);
  if (spec.size_mode != GenSpec::Size::kFixed || spec.frame_size != 64) {
    throw UsageError("--gen: the whole-packet iteration carries 64-byte frames: use size=64");
  }
  const PacketStore store = generate(spec, prefixes_of(t.fib));
  auto gtable = ipv4::Ipv4GpuTable::create(*t.table);
  auto variants = ipv4::Ipv4GpuVariants::create(*gtable);
  const Digest want = cpu_digest(*t.table, store);

  const std::vector<Iteration> its = {
      {"1 whole packets", true, gpu::GpuMode::kAsync, 1},
      {"2 headers only", false, gpu::GpuMode::kAsync, 1},
      {"3 mapped memory", false, gpu::GpuMode::kMapped, 1},
      {"4 streams", false, gpu::GpuMode::kAsync, o.slots},
      {"  mapped + streams", false, gpu::GpuMode::kMapped, o.slots},
      {"  graph + streams", false, gpu::GpuMode::kGraph, o.slots},
      {"  persistent", false, gpu::GpuMode::kPersistent, 1},
      {"  whole + streams", true, gpu::GpuMode::kAsync, o.slots},
  };
  std::printf("GPU-router iterations: %s, %zu packets x %llu passes, batches of %u, one thread\n",
              format_gen_spec(spec).c_str(), store.size(), static_cast<unsigned long long>(o.repeat), o.batch);
  std::printf("%-20s %9s %8s %10s %10s %10s %10s  %s\n", "iteration", "mode", "slots", "Mpps", "min us",
              "median us", "max us", "check vs CPU");
  nlohmann::json rows = nlohmann::json::array();
  int wrong = 0;
  for (const Iteration& it : its) {
    gpu::OffloadOptions oo;
    oo.mode = it.mode;
    oo.capacity = size_t{(o.batch + PacketBatch::kCapacity - 1) / PacketBatch::kCapacity} * PacketBatch::kCapacity;
    oo.slots = it.slots;
    auto r = it.whole ? variants->make_frame_runner(oo) : gtable->make_runner(oo);
    Counters check_c(64);
    Digest got;
    RouterLoop(it, *r, o.batch, PacketPool::kDefaultCellSize, check_c).run(store, 1, &got, nullptr);
    const bool same = got == want && check_c.balanced();
    wrong += !same;
    std::vector<double> rates;
    std::vector<uint64_t> batch_ns;
    for (int k = 0; k < o.reps; ++k) {
      Counters c(64);
      batch_ns.clear();
      RouterLoop loop(it, *r, o.batch, PacketPool::kDefaultCellSize, c);
      const uint64_t t0 = now_ns();
      loop.run(store, o.repeat, nullptr, &batch_ns);
      rates.push_back(c.rx_packets / ((now_ns() - t0) / 1e9));
    }
    const double pps = bench::median(rates);
    std::printf("%-20s %9s %8d %10.2f %10.1f %10.1f %10.1f  %s\n", it.name.c_str(), gpu::gpu_mode_name(it.mode),
                r->slots(), pps / 1e6, pct(batch_ns, 0), pct(batch_ns, 0.5), pct(batch_ns, 1),
                same ? "identical" : "DIFFERENT");
    std::fflush(stdout);
    rows.push_back({{"iteration", it.name}, {"whole_packets", it.whole}, {"mode", gpu::gpu_mode_name(it.mode)},
                    {"slots", r->slots()}, {"rates_pps", rates}, {"median_pps", pps},
                    {"batch_latency_us", {{"min", pct(batch_ns, 0)}, {"p50", pct(batch_ns, 0.5)},
                                          {"p99", pct(batch_ns, 0.99)}, {"max", pct(batch_ns, 1)}}},
                    {"bytes_per_packet", it.whole ? 128 : 8}, {"identical_to_cpu", same}});
  }
  std::printf("results: %s\n", wrong ? "SOME ITERATIONS DIFFER FROM THE CPU" : "every iteration identical to the CPU path");
  if (!o.json.empty()) {
    nlohmann::json report = {{"bench", "gpu-router"}, {"machine", bench::machine_json()},
                             {"config", {{"fib", o.fib}, {"gen", format_gen_spec(spec)}, {"batch", o.batch},
                                         {"repeat", o.repeat}, {"reps", o.reps},
                                         {"latency", "per batch: start of gathering to last verdict"}}},
                             {"iterations", rows}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return wrong ? 4 : 0;
}

}  // namespace

void register_bench_gpu_router(CLI::App& bench) {
  auto o = std::make_shared<GpuRouterOptions>();
  CLI::App* c = bench.add_subcommand("gpu-router", "IPv4 forwarding through the GPU: the GPU-router report's iterations");
  c->add_option("--fib", o->fib, "forwarding table")->required()->check(CLI::ExistingFile);
  c->add_option("--gen", o->gen, "the traffic (tandem gen spec; size=64)")->capture_default_str();
  c->add_option("--batch", o->batch, "packets per GPU batch")->capture_default_str()->check(CLI::Range(256u, 1u << 22));
  c->add_option("--slots", o->slots, "batches in flight for the streams iterations")->capture_default_str()->check(CLI::Range(2, 8));
  c->add_option("--repeat", o->repeat, "passes over the input per repetition")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1000}));
  c->add_option("--reps", o->reps, "repetitions (median reported)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
