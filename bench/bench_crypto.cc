// `tandem bench crypto`: the IPsec gateway's ESP per suite, frame size and direction (out:
// encapsulate, pad, encrypt, authenticate; in: verify, decrypt, check, decapsulate), on the CPU and
// the GPU, side by side in one run:
//   cpu-openssl x1 / xN    the ipsec app's scalar path (OpenSSL EVP, contexts per thread) on 1 and
//                          on N threads, each processing its share of the frames in a packet cell
//   cpu-ipsec-mb x1 / xN   its batched path: bursts of 256 through intel-ipsec-mb's multi-buffer
//                          jobs (where the build has the library)
//   gpu kernel             the GPU kernel alone on a batch already in device memory
//   gpu host-to-host x1/xS frames copied in, processed, copied out: one batch at a time, and S
//                          batches in flight on their own streams (copies and kernels overlap)
//   pcie bound (duplex)    the rate the pinned copies allow, measured with both directions busy
// With --apunet and --batch-sweep, two more tables (bench_crypto_apunet.h): APUNet's eight
// algorithms in four columns (CPU, CPU optimised, GPU with copies, GPU mapped) and Koromilas et
// al.'s batch-size sweep of AES-128-CBC and MD5; opt-in, each takes about a minute on the device.
// Before timing, the GPU's frames are checked byte for byte against the CPU app's for the same SAs
// and sequence numbers. Inbound SAs run without replay windows (each pass replays the same
// numbers). Rates are frames per second and cleartext Gbit/s; each repetition runs for at least
// --min-seconds, and the median of --reps is reported.
#include <algorithm>
#include <functional>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/ipsec/esp_gpu.h"
#include "apps/ipsec/esp_ipsecmb.h"
#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_gen.h"
#include "bench/bench_crypto_apunet.h"
#include "bench/bench_crypto_rsa.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "core/machine_info.h"
#include "core/usage_error.h"
#include "gpu/gpu_runtime.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct CryptoOptions {
  std::string ciphers = "aes-128-cbc,aes-128-gcm,aes-256-gcm,chacha20-poly1305";
  std::string sizes = "64,128,256,512,1024,1420,imix";
  uint32_t sas = 1024;
  uint32_t frames = 65536;
  int slots = 4;
  bool esp = true;
  bool rsa = true;
  std::string threads = "1,all";
  bool gpu = true;
  int reps = 3;
  double min_seconds = 0.5;
  std::string json;
  bool apunet = false;
  bool sweep = false;
  PaperTableOptions tables;  // their own flags (threads, reps, GPU: the command's)
};

struct Row {
  std::string dir, path;
  int threads = 0;  // CPU threads, or GPU batches in flight
  std::vector<double> pps;
  bool identical = true;  // the GPU's frames equal the CPU app's (checked before timing)
  std::string cipher, size;
  bool checked = false;  // the row's output was compared here (the CPU paths are compared in tests)
};

// Every frame of `s` through the app in cells on `threads` threads (frame i on thread i % threads),
// whole passes until min_seconds; frames per second. One frame at a time (OpenSSL), or in bursts
// of 256 (intel-ipsec-mb's multi-buffer pass, the app's batched path).
double cpu_rate(const ipsec::IpsecApp& app, const PacketStore& s, int threads, double min_seconds, bool bursts) {
  constexpr uint32_t kBurst = 256, kCell = 2048;
  std::vector<std::vector<uint8_t>> cells(threads, std::vector<uint8_t>(size_t{kBurst} * kCell));
  return bench::parallel_rate(threads, min_seconds, [&](int t) {
    uint8_t* frames[kBurst];
    uint32_t lens[kBurst], verdicts[kBurst];
    for (uint32_t k = 0; k < kBurst; ++k) frames[k] = cells[t].data() + size_t{k} * kCell;
    uint64_t n = 0;
    uint32_t k = 0;
    for (size_t i = t; i < s.size(); i += threads) {
      std::memcpy(frames[k], s.frame(i), s.caplen[i]);
      lens[k] = s.caplen[i];
      if (!bursts) {
        app.process(frames[k], &lens[k], kCell);
        ++n;
      } else if (++k == kBurst) {
        app.process_burst(frames, lens, kCell, k, verdicts);
        n += k;
        k = 0;
      }
    }
    if (k) app.process_burst(frames, lens, kCell, k, verdicts);
    return n + k;
  });
}

// The generated SAs of one suite; inbound SAs without replay windows, since every pass of a
// benchmark replays the same sequence numbers.
ipsec::SaFile bench_sas(uint32_t n, ipsec::Cipher cipher) {
  ipsec::SaFile f = ipsec::generated_sas(n, cipher, 1);
  for (ipsec::Sa& sa : f.sas) {
    if (sa.dir == ipsec::SaDir::kIn) sa.replay_window = 0;
  }
  return f;
}

// The GPU rows of one direction: checked against the CPU app frame for frame, then the kernel
// alone, host to host with one batch at a time, and with every slot in flight.
void gpu_rows(const CryptoOptions& o, ipsec::EspGpu& g, ipsec::SaTable& gpu_table, const ipsec::IpsecApp& cpu,
              ipsec::EspGpu::Op op, const PacketStore& s, size_t max_bytes, const std::string& dir,
              const std::function<void(Row)>& add) {
  // Every slot holds the whole input (the packer takes each frame's SA and number as the CPU
  // path would); the CPU app on a twin table gives the frames to compare with.
  ipsec::EspPacked p;
  for (int slot = 0; slot < g.slots(); ++slot) p = ipsec::pack_esp_frames(g, slot, gpu_table, op, s, 0, s.size(), max_bytes, nullptr);
  g.run(0, op, p.frames, p.bytes);
  bool same = p.frames == s.size();
  std::vector<uint8_t> want(2048);
  for (size_t i = 0; i < p.frames && same; ++i) {
    std::memcpy(want.data(), s.frame(i), s.caplen[i]);
    uint32_t len = s.caplen[i];
    const uint32_t v = cpu.process(want.data(), &len, static_cast<uint32_t>(want.size()));
    same = g.verdicts(0)[i] == v && !Verdict::is_drop(v) && g.out_lengths(0)[i] == len &&
           std::memcmp(want.data(), g.out_bytes(0) + g.offsets(0)[i], len) == 0;
  }
  Row k{dir, "gpu kernel", 0, {}, same};
  k.checked = true;
  for (int r = 0; r < o.reps; ++r) {
    const double t = g.time_kernel(0, op, p.frames, p.bytes, std::max(3, static_cast<int>(o.min_seconds * 200)));
    k.pps.push_back(t > 0 ? p.frames / t : 0);
  }
  add(std::move(k));
  for (int slots : {1, g.slots()}) {
    Row h{dir, "gpu host-to-host", slots, {}, same};
    h.checked = true;
    for (int r = 0; r < o.reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      uint64_t n = 0, b = 0;
      do {
        const int slot = static_cast<int>(b++ % slots);
        if (b > static_cast<uint64_t>(slots)) g.wait(slot);
        g.submit(slot, op, p.frames, p.bytes);
        n += p.frames;
      } while (bench::seconds_since(t0) < o.min_seconds);
      for (int slot = 0; slot < slots; ++slot) g.wait(slot);
      h.pps.push_back(n / bench::seconds_since(t0));
    }
    add(std::move(h));
  }
}

int run_bench(const CryptoOptions& o) {
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> thread_counts;
  for (const auto& t : bench::split_list(o.threads)) thread_counts.push_back(t == "all" ? all : std::stoi(t));
  std::string why;
  const bool gpu = o.gpu && gpu::available(&why);
  double h2d = 0, d2h = 0;
  if (gpu) {
    const gpu::PcieBandwidth bw = gpu::measure_pcie_bandwidth(size_t{256} << 20, 5);
    h2d = bw.both_h2d_gbs;
    d2h = bw.both_d2h_gbs;
  }
  char pcie[160];
  std::snprintf(pcie, sizeof pcie, "GPU; pinned PCIe with both directions busy: %.1f GB/s in, %.1f GB/s out", h2d, d2h);
  std::printf("bench crypto: ESP tunnel mode over IPv4, %u SA pairs, %u frames per size; %s; CPU bursts: %s\n", o.sas,
              o.frames, gpu ? pcie : ("no GPU: " + why).c_str(), ipsec::EspIpsecMb::describe().c_str());
  std::printf("%-18s %-5s %-4s %-18s %7s %10s %10s %9s  %s\n", "cipher", "size", "dir", "path", "thr/slot", "Mpps",
              "Gbit/s", "vs x1", "check");
  std::vector<Row> rows;
  int wrong = 0;
  for (const auto& cname : o.esp ? bench::split_list(o.ciphers) : std::vector<std::string>{}) {
    const ipsec::Cipher cipher = ipsec::cipher_by_name(cname);
    for (const auto& size : bench::split_list(o.sizes)) {
      for (const std::string dir : {"out", "in"}) {
        const ipsec::EspGpu::Op op = dir == "out" ? ipsec::EspGpu::Op::kSeal : ipsec::EspGpu::Op::kOpen;
        ipsec::SaTable table(bench_sas(o.sas, cipher));
        ipsec::IpsecApp app(table);
        const PacketStore s = ipsec::generate_esp_traffic(
            table, parse_gen_spec("count=" + std::to_string(o.frames) + ",dst=fib,flows=0,size=" + size + ",seed=5"), dir);
        // Rates count the cleartext frame's bytes either way.
        const double clear_bytes = static_cast<double>(ipsec::generate_esp_traffic(
            table, parse_gen_spec("count=256,dst=fib,flows=0,size=" + size + ",seed=5"), "out").total_caplen()) / 256;
        double one_thread = 0;  // the first CPU row's rate: what the others are compared with
        auto add = [&](Row r) {
          r.cipher = cname;
          r.size = size;
          const double pps = bench::median(r.pps);
          if (one_thread == 0) one_thread = pps;
          std::printf("%-18s %-5s %-4s %-18s %7d %10.2f %10.2f %8.2fx  %s\n", cname.c_str(), size.c_str(), dir.c_str(),
                      r.path.c_str(), r.threads, pps / 1e6, pps * clear_bytes * 8 / 1e9, pps / one_thread,
                      !r.checked ? "-" : r.identical ? "identical" : "DIFFERENT");
          wrong += !r.identical;
          rows.push_back(std::move(r));
        };
        for (const bool bursts : {false, true}) {
          if (bursts && !ipsec::EspIpsecMb::available()) continue;
          for (int t : thread_counts) {
            Row r{dir, bursts ? "cpu-ipsec-mb" : "cpu-openssl", t};
            for (int k = 0; k < o.reps; ++k) r.pps.push_back(cpu_rate(app, s, t, o.min_seconds, bursts));
            add(std::move(r));
          }
        }
        if (!gpu) continue;
        size_t max_bytes = 0;
        for (size_t i = 0; i < s.size(); ++i) max_bytes += (s.caplen[i] + ipsec::kMaxEspGrowth + 15) / 16 * 16;
        // Fresh tables for the GPU and its CPU twin: the rows above took sequence numbers.
        ipsec::SaTable gpu_table(bench_sas(o.sas, cipher));
        auto g = ipsec::EspGpu::create(gpu_table, s.size(), max_bytes, o.slots);
        ipsec::SaTable twin(bench_sas(o.sas, cipher));
        ipsec::IpsecApp cpu(twin);
        gpu_rows(o, *g, gpu_table, cpu, op, s, max_bytes, dir, add);
        // What the copies allow with both directions at once: each frame's bytes in and out.
        const double in_bytes = static_cast<double>(s.total_caplen()) / s.size();
        double out_bytes = 0;
        for (size_t i = 0; i < s.size(); ++i) out_bytes += g->out_lengths(0)[i];
        out_bytes /= s.size();
        add(Row{dir, "pcie bound (duplex)", 0, {1 / std::max(in_bytes / (h2d * 1e9), out_bytes / (d2h * 1e9))}, true});
      }
    }
  }
  nlohmann::json rsa_json;
  if (o.rsa) {
    RsaBenchOptions rsa_options;
    rsa_options.threads = thread_counts;
    rsa_options.reps = o.reps;
    rsa_options.min_seconds = o.min_seconds;
    rsa_options.gpu = gpu;
    const RsaBenchResult rsa = bench_rsa(rsa_options);
    wrong += rsa.wrong;
    rsa_json = rsa.json;
  }
  nlohmann::json apunet_json, sweep_json;
  if (o.apunet || o.sweep) {
    PaperTableOptions t = o.tables;
    t.threads = *std::max_element(thread_counts.begin(), thread_counts.end());
    t.reps = o.reps;
    t.min_seconds = o.min_seconds;
    t.gpu = gpu;
    t.gpu_why = o.gpu ? why : "--no-gpu";
    t.connections = o.sas;
    if (o.apunet) {
      // The RSA rows above serve when they ran on as many threads; else the table runs its own.
      const PaperTableResult r = bench_apunet(t, o.rsa ? rsa_json["rows"] : nlohmann::json());
      wrong += r.wrong;
      apunet_json = r.json;
    }
    if (o.sweep) {
      const PaperTableResult r = bench_crypto_sweep(t);
      wrong += r.wrong;
      sweep_json = r.json;
    }
  }
  if (!o.json.empty()) {
    nlohmann::json jrows = nlohmann::json::array();
    for (const Row& r : rows) {
      jrows.push_back({{"cipher", r.cipher}, {"size", r.size}, {"direction", r.dir}, {"path", r.path},
                       {"threads_or_slots", r.threads}, {"rates_pps", r.pps}, {"median_pps", bench::median(r.pps)},
                       {"checked", r.checked}, {"identical_to_cpu", r.identical}});
    }
    nlohmann::json report = {{"bench", "crypto"}, {"machine", bench::machine_json()},
                             {"config", {{"sas", o.sas}, {"frames", o.frames}, {"slots", o.slots}, {"reps", o.reps},
                                         {"min_seconds", o.min_seconds}}},
                             {"pcie_gbytes_per_s_duplex", {{"h2d", h2d}, {"d2h", d2h}}},
                             {"cpu_bursts", ipsec::EspIpsecMb::describe()}, {"rows", jrows}, {"rsa", rsa_json},
                             {"apunet", apunet_json}, {"batch_sweep", sweep_json}};
    bench::write_json(o.json, report);
    std::printf("wrote %s\n", o.json.c_str());
  }
  return wrong ? 4 : 0;
}

}  // namespace

void register_bench_crypto(CLI::App& bench) {
  auto o = std::make_shared<CryptoOptions>();
  CLI::App* c = bench.add_subcommand("crypto", "outbound IPsec ESP per suite and size: OpenSSL on 1 and N threads vs the GPU");
  c->add_option("--ciphers", o->ciphers, "suites")->capture_default_str();
  c->add_option("--sizes", o->sizes, "cleartext frame sizes (64..1518 or imix)")->capture_default_str();
  c->add_option("--sas", o->sas, "generated SAs (one connection each)")->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  c->add_option("--frames", o->frames, "frames per size (one GPU batch)")->capture_default_str()->check(CLI::Range(256u, 1u << 22));
  c->add_option("--slots", o->slots, "GPU batches in flight (host-to-host rows: 1 and this)")->capture_default_str()->check(CLI::Range(1, 8));
  c->add_option("--threads", o->threads, "CPU thread counts ('all': every core)")->capture_default_str();
  c->add_flag("!--no-gpu", o->gpu, "leave out the GPU rows");
  c->add_flag("!--no-esp", o->esp, "leave out the ESP rows");
  c->add_flag("!--no-rsa", o->rsa, "leave out RSA-2048 private operations (OpenSSL on 1 and N threads vs the GPU)");
  c->add_option("--reps", o->reps, "repetitions (median reported)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--min-seconds", o->min_seconds, "least duration of a repetition")->capture_default_str()->check(CLI::Range(0.0, 600.0));
  c->add_flag("--apunet", o->apunet, "APUNet's eight-algorithm table: CPU, CPU optimised, GPU with copies, GPU mapped");
  c->add_flag("--batch-sweep", o->sweep, "Koromilas et al. Fig. 3: AES-128-CBC and MD5 throughput and latency per batch size");
  c->add_option("--apunet-fib", o->tables.fib, "--apunet: the IPv4/IPv6 lookups' FIB")->capture_default_str();
  c->add_option("--apunet-rules", o->tables.rules, "--apunet: Aho-Corasick's rules (a file or a folder of *.rules[.gz])")
      ->capture_default_str();
  c->add_option("--apunet-lookup-packets", o->tables.lookup_packets, "--apunet: keys of the lookup rows")
      ->capture_default_str()->check(CLI::Range(1024u, 1u << 26));
  c->add_option("--apunet-payload-packets", o->tables.payload_packets, "--apunet: packets of the payload rows (one GPU batch)")
      ->capture_default_str()->check(CLI::Range(256u, 1u << 20));
  c->add_option("--apunet-streams", o->tables.streams, "--apunet: GPU streams a payload batch's copies are split over")
      ->capture_default_str()->check(CLI::Range(1, 8));
  c->add_option("--sweep-batches", o->tables.batches, "--batch-sweep: packets per batch")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) {
            for (const std::string& b : bench::split_list(s)) {
              if (b.find_first_not_of("0123456789") != std::string::npos || b.size() > 7 || std::stoul(b) == 0 ||
                  std::stoul(b) > (1u << 22)) {
                return b + " is not a batch size in 1..4194304";
              }
            }
            return bench::split_list(s).empty() ? std::string("no batch sizes") : std::string();
          },
          "N,N,..."));
  c->add_option("--sweep-size", o->tables.sweep_size, "--batch-sweep: packet bytes")
      ->capture_default_str()->check(CLI::Range(16u, 9000u));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
