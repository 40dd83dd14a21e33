// `tandem bench crypto`: the IPsec gateway's outbound ESP (encapsulate, pad, encrypt, authenticate)
// per suite and frame size, on the CPU and the GPU, side by side in one run:
//   cpu-openssl x1 / xN   the ipsec app's own path (OpenSSL EVP, contexts per thread) on 1 and on N
//                         threads, each sealing its share of the frames in a packet cell
//   gpu kernel            the GPU seal kernel alone on a batch already in device memory
//   gpu host-to-host      frames copied in, sealed, copied back (one stream, batch by batch)
//   pcie bound            the rate the measured pinned copies allow for those bytes (in + out)
// Before timing, the GPU's frames are checked byte for byte against OpenSSL's for the same SAs and
// sequence numbers. Rates are cleartext frames per second and cleartext Gbit/s; each repetition
// runs for at least --min-seconds, and the median of --reps is reported.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/ipsec/esp_gpu.h"
#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_gen.h"
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
  std::string threads = "1,all";
  bool gpu = true;
  int reps = 3;
  double min_seconds = 0.5;
  std::string json;
};

struct Row {
  std::string cipher, size, path;
  int threads = 0;
  std::vector<double> pps;
  bool identical = true;
};

// Seals every frame of `s` in cells on `threads` threads (frame i on thread i % threads), whole
// passes until min_seconds; frames per second.
double cpu_rate(const ipsec::IpsecApp& app, const PacketStore& s, int threads, double min_seconds) {
  std::atomic<uint64_t> done{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      pin_this_thread(t);
      std::vector<uint8_t> cell(2048);
      uint64_t n = 0;
      do {
        for (size_t i = t; i < s.size(); i += threads) {
          std::memcpy(cell.data(), s.frame(i), s.caplen[i]);
          uint32_t len = s.caplen[i];
          app.process(cell.data(), &len, static_cast<uint32_t>(cell.size()));
          ++n;
        }
      } while (bench::seconds_since(t0) < min_seconds);
      done += n;
    });
  }
  for (auto& th : pool) th.join();
  return done / bench::seconds_since(t0);
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
    h2d = bw.h2d_gbs;
    d2h = bw.d2h_gbs;
  }
  std::printf("bench crypto: outbound ESP (tunnel, IPv4), %u SAs, %u frames per size; %s\n", o.sas, o.frames,
              gpu ? ("GPU; pinned PCIe " + std::to_string(h2d).substr(0, 5) + " GB/s in, " + std::to_string(d2h).substr(0, 5) +
                     " GB/s out").c_str()
                  : ("no GPU: " + why).c_str());
  std::printf("%-18s %-5s %-18s %7s %10s %10s %9s  %s\n", "cipher", "size", "path", "threads", "Mpps", "Gbit/s", "vs x1", "check");
  std::vector<Row> rows;
  int wrong = 0;
  for (const auto& cname : bench::split_list(o.ciphers)) {
    const ipsec::Cipher cipher = ipsec::cipher_by_name(cname);
    ipsec::SaTable table(ipsec::generated_sas(o.sas, cipher, 1));
    ipsec::IpsecApp app(table);
    for (const auto& size : bench::split_list(o.sizes)) {
      const PacketStore s = ipsec::generate_esp_traffic(
          table, parse_gen_spec("count=" + std::to_string(o.frames) + ",dst=fib,flows=0,size=" + size + ",seed=5"), "out");
      const double mean_bytes = static_cast<double>(s.total_caplen()) / s.size();
      double one_thread = 0;  // the first CPU row's rate: what the others are compared with
      auto add = [&](Row r) {
        const double pps = bench::median(r.pps);
        if (one_thread == 0) one_thread = pps;
        std::printf("%-18s %-5s %-18s %7d %10.2f %10.2f %8.2fx  %s\n", cname.c_str(), size.c_str(), r.path.c_str(), r.threads,
                    pps / 1e6, pps * mean_bytes * 8 / 1e9, pps / one_thread, r.identical ? "identical" : "DIFFERENT");
        wrong += !r.identical;
        rows.push_back(std::move(r));
      };
      for (int t : thread_counts) {
        Row r{cname, size, "cpu-openssl", t};
        for (int k = 0; k < o.reps; ++k) r.pps.push_back(cpu_rate(app, s, t, o.min_seconds));
        add(std::move(r));
      }
      if (!gpu) continue;
      // The batch: every frame with room to grow; SA and number as the CPU path would choose them.
      size_t bytes = 0;
      for (size_t i = 0; i < s.size(); ++i) bytes += (s.caplen[i] + ipsec::kMaxEspGrowth + 15) / 16 * 16;
      auto g = ipsec::EspGpu::create(table, s.size(), bytes);
      ipsec::SaTable ref_table(ipsec::generated_sas(o.sas, cipher, 1));
      ipsec::IpsecApp ref(ref_table);
      size_t used = 0;
      bool same = true;
      std::vector<std::vector<uint8_t>> want(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        ParsedPacket pp;
        parse_packet(s.frame(i), s.caplen[i], &pp);
        const uint32_t sa = ref_table.select(pp.tuple);
        g->sas()[i] = sa;
        g->seqs()[i] = ref_table.peek_seq(sa);
        g->offsets()[i] = static_cast<uint32_t>(used);
        g->lengths()[i] = s.caplen[i];
        std::memcpy(g->bytes() + used, s.frame(i), s.caplen[i]);
        used += (s.caplen[i] + ipsec::kMaxEspGrowth + 15) / 16 * 16;
        want[i].assign(s.frame(i), s.frame(i) + s.caplen[i]);
        want[i].resize(s.caplen[i] + ipsec::kMaxEspGrowth);
        uint32_t len = s.caplen[i];
        ref.process(want[i].data(), &len, static_cast<uint32_t>(want[i].size()));
        want[i].resize(len);
      }
      g->seal(s.size(), used);
      for (size_t i = 0; i < s.size() && same; ++i) {
        same = g->out_lengths()[i] == want[i].size() &&
               std::equal(want[i].begin(), want[i].end(), g->out_bytes() + g->offsets()[i]);
      }
      Row k{cname, size, "gpu kernel", 0, {}, same};
      for (int r = 0; r < o.reps; ++r) {
        const double t = g->time_seal_kernel(s.size(), used, std::max(3, static_cast<int>(o.min_seconds * 200)));
        k.pps.push_back(t > 0 ? s.size() / t : 0);
      }
      add(std::move(k));
      Row h{cname, size, "gpu host-to-host", 0, {}, same};
      for (int r = 0; r < o.reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        uint64_t n = 0;
        do {
          g->seal(s.size(), used);
          n += s.size();
        } while (bench::seconds_since(t0) < o.min_seconds);
        h.pps.push_back(n / bench::seconds_since(t0));
      }
      add(std::move(h));
      // What the copies alone allow: the batch's bytes in and out, one direction after the other.
      const double per_frame_s = used / static_cast<double>(s.size()) * (1 / (h2d * 1e9) + 1 / (d2h * 1e9));
      Row b{cname, size, "pcie bound (seq.)", 0, {1 / per_frame_s}, true};
      add(std::move(b));
    }
  }
  if (!o.json.empty()) {
    nlohmann::json jrows = nlohmann::json::array();
    for (const Row& r : rows) {
      jrows.push_back({{"cipher", r.cipher}, {"size", r.size}, {"path", r.path}, {"threads", r.threads},
                       {"rates_pps", r.pps}, {"median_pps", bench::median(r.pps)}, {"identical_to_openssl", r.identical}});
    }
    nlohmann::json report = {{"bench", "crypto"}, {"machine", bench::machine_json()},
                             {"config", {{"sas", o.sas}, {"frames", o.frames}, {"reps", o.reps}, {"min_seconds", o.min_seconds}}},
                             {"pcie_gbytes_per_s", {{"h2d", h2d}, {"d2h", d2h}}}, {"rows", jrows}};
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
  c->add_option("--threads", o->threads, "CPU thread counts ('all': every core)")->capture_default_str();
  c->add_flag("!--no-gpu", o->gpu, "leave out the GPU rows");
  c->add_option("--reps", o->reps, "repetitions (median reported)")->capture_default_str()->check(CLI::Range(1, 100));
  c->add_option("--min-seconds", o->min_seconds, "least duration of a repetition")->capture_default_str()->check(CLI::Range(0.0, 600.0));
  c->add_option("--json", o->json, "write the report here");
  c->callback([o] {
    const int rc = run_bench(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
