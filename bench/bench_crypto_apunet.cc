// `tandem bench crypto --apunet`: APUNet's eight algorithms (Go et al., NSDI'17, the eight of its
// cost-efficiency analysis: IPv4, IPv6, Aho-Corasick, ChaCha20, Poly1305, SHA-1, SHA-2, RSA), each
// as throughput in four columns measured in one run:
//   cpu             the plain path on every core: the scalar lookup, Aho-Corasick one packet at a
//                   time, OpenSSL one message at a time (CpuPayloadEngine::kOpenssl), OpenSSL's RSA
//   cpu-opt         the optimised CPU path on every core: the apps' batched latency-hiding lookup
//                   (APUNet's G-Opt column), the batched lockstep Aho-Corasick walk, intel-ipsec-mb's
//                   multi-buffer jobs; none for RSA (OpenSSL's RSAZ code is already the cpu column)
//   gpu-copies      host to host with PCIe copies: the apps' async offload runners (4 batches in
//                   flight), the DPI app's GPU matcher, crypto::DigestGpu, the payload kernels split
//                   over --streams streams, RsaGpu::run
//   gpu-mapped      no copy calls: the lookup runners' mapped mode, the payload kernels on mapped
//                   pinned host memory (bench_crypto_kernels.h); RSA: the kernel alone (RsaGpu has no
//                   mapped path; its 512 bytes per operation are nothing beside its compute)
// The seed (the APUNet slides) names no packet sizes: lookups run on 64-B packets (one key per
// minimum-size frame, the lookup's worst case), the payload algorithms on 1514-B packets (an MTU
// frame's bytes; Aho-Corasick scans the TCP payload of 1514-B frames), RSA-2048 per private-key
// operation. Gbit/s counts those bytes. Every cell's output is compared with the reference (the
// scalar lookup, Aho-Corasick one at a time, OpenSSL) before it is timed; a cell that differs says
// MISMATCH and is not timed.
#include "bench/bench_crypto_apunet.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "apps/crypto/digest_gpu.h"
#include "apps/dpi/aho_corasick.h"
#include "apps/dpi/dpi_gpu.h"
#include "apps/dpi/dpi_match.h"
#include "bench/bench_crypto_rsa.h"
#include "bench/bench_report.h"
#include "cli/app_setup.h"
#include "core/machine_info.h"
#include "gpu/offload.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

using bench::PayloadOp;
using bench::Payloads;

// ---- the table ----

namespace {

constexpr int kColumns = 4;
constexpr const char* kColumnKey[kColumns] = {"cpu", "cpu_optimised", "gpu_copies", "gpu_mapped"};
constexpr const char* kColumnHead[kColumns] = {"cpu", "cpu-opt", "gpu-copies", "gpu-mapped"};

struct Cell {
  std::vector<double> rates;  // items per second, one per repetition
  std::string how;            // what ran
  std::string status;         // "" when measured; else why not ("no GPU: ...", "MISMATCH: ...", "n/a: ...")
  bool checked = false;       // the output was compared with the reference before timing
};

struct Algo {
  std::string name, unit, workload;
  double item_bytes = 0;  // Gbit/s = items/s * item_bytes * 8
  Cell cell[kColumns];
};

// --reps rates of one calling thread that repeats f() (the items it did) for min_seconds each.
template <class F>
std::vector<double> host_rates(const PaperTableOptions& o, F&& f) {
  std::vector<double> r;
  for (int k = 0; k < o.reps; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    double items = 0;
    do items += f(); while (bench::seconds_since(t0) < o.min_seconds);
    r.push_back(items / bench::seconds_since(t0));
  }
  return r;
}

// Checks, then times: `same` says whether the cell's first output equals the reference.
template <class F>
void checked_cell(Cell& c, bool same, F&& rates) {
  c.checked = true;
  if (!same) {
    c.status = "MISMATCH: output differs from the reference; not timed";
    return;
  }
  c.rates = rates();
}

void set_status(Algo& a, std::initializer_list<int> cols, const std::string& why) {
  for (int c : cols) a.cell[c].status = why;
}

std::string no_gpu(const PaperTableOptions& o) { return "no GPU: " + o.gpu_why; }

// IPv4 / IPv6: the keys of the app's own 64-B traffic (destinations drawn from the FIB).
void lookup_row(const PaperTableOptions& o, Algo& a) {
  const int T = o.threads;
  AppOptions ao;
  ao.app = a.name;
  ao.set("fib", o.fib);
  LoadedApp la;
  try {
    la = load_app(ao);
  } catch (const std::exception& e) {
    set_status(a, {0, 1, 2, 3}, std::string("skipped: ") + e.what() + " (--apunet-fib)");
    return;
  }
  ForwardApp& app = *la.app;
  a.workload = la.table_desc;
  const PacketStore s = la.generate(parse_gen_spec("count=" + std::to_string(o.lookup_packets) + ",dst=fib,flows=0,size=" +
                                                   std::to_string(o.lookup_size) + ",seed=5"));
  const size_t ib = app.item_bytes(), rb = app.result_bytes();
  std::vector<uint8_t> items(s.size() * ib);
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) n += app.item_of_frame(s.frame(i), s.caplen[i], items.data() + n * ib);
  std::vector<uint8_t> want(n * rb), got(n * rb);
  app.lookup_items_scalar(items.data(), want.data(), n);
  auto share = [&](int t, auto&& f) {
    const size_t b = n * t / T, e = n * (t + 1) / T;
    f(items.data() + b * ib, got.data() + b * rb, e - b);
    return e - b;
  };
  a.cell[0].how = "the scalar lookup (lookup_items_scalar; the reference), one key at a time, " + std::to_string(T) + " threads";
  for (int k = 0; k < o.reps; ++k) {
    a.cell[0].rates.push_back(bench::parallel_rate(T, o.min_seconds, [&](int t) {
      return share(t, [&](const uint8_t* in, uint8_t* out, size_t m) { app.lookup_items_scalar(in, out, m); });
    }));
  }
  a.cell[1].how = "the batched latency-hiding lookup (lookup_items) over each thread's share, " + std::to_string(T) + " threads";
  auto batched = [&](int t) { return share(t, [&](const uint8_t* in, uint8_t* out, size_t m) { app.lookup_items(in, out, m); }); };
  std::fill(got.begin(), got.end(), 0);
  bench::parallel_rate(T, 0, batched);
  checked_cell(a.cell[1], got == want, [&] {
    std::vector<double> r;
    for (int k = 0; k < o.reps; ++k) r.push_back(bench::parallel_rate(T, o.min_seconds, batched));
    return r;
  });
  const std::string why_not = no_gpu_path(ao);
  for (int col : {2, 3}) {
    Cell& c = a.cell[col];
    gpu::OffloadOptions oo;
    oo.mode = col == 2 ? gpu::GpuMode::kAsync : gpu::GpuMode::kMapped;
    oo.capacity = size_t{1} << 16;
    oo.slots = 4;
    c.how = std::string("the app's offload runner, ") + gpu::gpu_mode_name(oo.mode) + " mode, batches of 65536 " +
            std::to_string(ib) + "-B keys (not whole packets), 4 in flight";
    if (!o.gpu || !why_not.empty()) {
      c.status = o.gpu ? "n/a: " + why_not : no_gpu(o);
      continue;
    }
    auto runner = app.make_gpu_runner(oo);
    std::fill(got.begin(), got.end(), 0);
    gpu::run_all(*runner, items.data(), got.data(), n);
    checked_cell(c, got == want, [&] {
      return host_rates(o, [&] {
        gpu::run_all(*runner, items.data(), got.data(), n);
        return double(n);
      });
    });
  }
}

std::vector<std::string> rule_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string f = e.path().string();
      if (f.ends_with(".rules") || f.ends_with(".rules.gz")) files.push_back(f);
    }
    std::sort(files.begin(), files.end());
  } else if (fs::exists(path, ec)) {
    files.push_back(path);
  }
  return files;
}

// Aho-Corasick over every content pattern of the rules, on match-free TCP payloads of 1514-B frames.
void dpi_row(const PaperTableOptions& o, Algo& a) {
  const int T = o.threads;
  const std::vector<std::string> files = rule_files(o.rules);
  if (files.empty()) {
    set_status(a, {0, 1, 2, 3}, "skipped: no rule files at " + o.rules + " (--apunet-rules)");
    return;
  }
  dpi::IdsLoadOptions lo;
  lo.skip_bad = true;
  const dpi::IdsRuleSet set = dpi::load_ids_rules(files, lo);
  const dpi::AhoCorasick ac = dpi::AhoCorasick::build(set.patterns);
  PacketStore s = generate(parse_gen_spec("count=" + std::to_string(o.payload_packets) + ",size=" +
                                          std::to_string(o.payload_size + 4) + ",proto=tcp,flows=" +
                                          std::to_string(std::min(10000u, o.payload_packets)) + ",seed=9"));
  dpi::make_match_free(s, ac);
  const size_t n = s.size();
  std::vector<const uint8_t*> ptr(n);
  std::vector<uint32_t> len(n);
  Payloads pl;
  pl.keys.resize(32);
  for (size_t i = 0; i < n; ++i) {
    const dpi::PacketInfo info = dpi::packet_info(s.frame(i), s.caplen[i]);
    ptr[i] = info.bytes();
    len[i] = info.len;
    pl.add(info.len, 0, info.bytes());
  }
  a.workload = std::to_string(set.patterns.size()) + " patterns of " + std::to_string(files.size()) +
               " rule files, " + std::to_string(ac.states()) + " states; match-free TCP payloads of " +
               std::to_string(len.empty() ? 0 : len[0]) + " B";
  std::vector<std::vector<uint32_t>> want(n), got(n);
  for (size_t i = 0; i < n; ++i) ac.patterns_in(ptr[i], len[i], &want[i]);
  auto cpu = [&](bool batched) {
    return [&, batched](int t) {
      const size_t b = n * t / T, e = n * (t + 1) / T;
      if (batched) {
        ac.patterns_in_batch(ptr.data() + b, len.data() + b, e - b, got.data() + b);
      } else {
        for (size_t i = b; i < e; ++i) ac.patterns_in(ptr[i], len[i], &got[i]);
      }
      return e - b;
    };
  };
  a.cell[0].how = "one payload at a time (patterns_in; the reference), " + std::to_string(T) + " threads";
  for (int k = 0; k < o.reps; ++k) a.cell[0].rates.push_back(bench::parallel_rate(T, o.min_seconds, cpu(false)));
  a.cell[1].how = "batches of 8192 sorted by length, 32 walked in lockstep (patterns_in_batch), " + std::to_string(T) + " threads";
  for (auto& g : got) g.clear();
  bench::parallel_rate(T, 0, cpu(true));
  checked_cell(a.cell[1], got == want, [&] {
    std::vector<double> r;
    for (int k = 0; k < o.reps; ++k) r.push_back(bench::parallel_rate(T, o.min_seconds, cpu(true)));
    return r;
  });
  a.cell[2].how = "the DPI app's GPU matcher (AhoCorasickGpu): 16-MiB batches, 2 in flight, host to host";
  a.cell[3].how = "bench_crypto_kernels.cu's walk (ac_core.h) on mapped payloads, distinct ids counted and summed";
  if (!o.gpu) {
    set_status(a, {2, 3}, no_gpu(o));
    return;
  }
  auto g = dpi::AhoCorasickGpu::create(ac);
  for (auto& x : got) x.clear();
  g->patterns_in_batch(ptr.data(), len.data(), n, got.data());
  checked_cell(a.cell[2], got == want, [&] {
    return host_rates(o, [&] {
      g->patterns_in_batch(ptr.data(), len.data(), n, got.data());
      return double(n);
    });
  });
  auto pg = bench::PayloadGpu::create(pl, &ac);
  pg->run_mapped(PayloadOp::kAhoCorasick, n);
  bool same = true;
  size_t overflow = 0;
  for (size_t i = 0; i < n && same; ++i) {
    uint32_t r[2];
    std::memcpy(r, pg->tags() + 8 * i, 8);
    uint32_t sum = 0;
    for (uint32_t id : want[i]) sum += id;
    overflow += r[0] == bench::kAcOverflow;  // the app would redo these on the CPU
    same = r[0] == bench::kAcOverflow || (r[0] == want[i].size() && r[1] == sum);
  }
  if (overflow) a.cell[3].how += "; " + std::to_string(overflow) + " payloads over the kept ids";
  checked_cell(a.cell[3], same, [&] {
    return host_rates(o, [&] {
      pg->run_mapped(PayloadOp::kAhoCorasick, n);
      return double(n);
    });
  });
}

// ChaCha20, Poly1305, SHA-1, SHA-256 on 1514-B messages, one key per connection.
void payload_row(const PaperTableOptions& o, Algo& a, PayloadOp op, const Payloads& p, bench::PayloadGpu* pg) {
  const int T = o.threads;
  const size_t n = p.size();
  using Kind = CpuPayloadEngine::Kind;
  std::vector<uint8_t> want(p.span(n)), want_tags(n * 32), out(p.span(n)), tags(n * 32);
  CpuPayloadEngine(Kind::kOpenssl, op, p).run(0, n, want.data(), want_tags.data());
  auto all_same = [&](const uint8_t* o_out, const uint8_t* o_tags) {
    for (size_t k = 0; k < n; ++k) {
      if (!same_payload_output(op, p, k, want.data(), want_tags.data(), o_out, o_tags)) return false;
    }
    return true;
  };
  auto cpu_rates = [&](Kind k) {
    std::vector<double> r;
    for (int i = 0; i < o.reps; ++i) r.push_back(cpu_payload_rounds(k, op, p, n, T, o.min_seconds, false).per_s);
    return r;
  };
  a.cell[0].how = "OpenSSL EVP (the reference), one message at a time, " + std::to_string(T) + " threads";
  a.cell[0].rates = cpu_rates(Kind::kOpenssl);
  a.cell[1].how = "intel-ipsec-mb multi-buffer jobs, each thread's share in flight, " + std::to_string(T) + " threads";
  if (CpuPayloadEngine::supports(Kind::kIpsecMb, op)) {
    CpuPayloadEngine(Kind::kIpsecMb, op, p).run(0, n, out.data(), tags.data());
    checked_cell(a.cell[1], all_same(out.data(), tags.data()), [&] { return cpu_rates(Kind::kIpsecMb); });
  } else {
    a.cell[1].status = "n/a: " + CpuPayloadEngine::ipsec_mb_describe();
  }
  const bool digest = op == PayloadOp::kSha1 || op == PayloadOp::kSha256;
  a.cell[2].how = digest ? "crypto::DigestGpu: one batch, copy in, kernel, copy out"
                         : "bench_crypto_kernels.cu, the batch over " + std::to_string(o.streams) + " streams (copies overlap kernels)";
  a.cell[3].how = "bench_crypto_kernels.cu on mapped pinned host memory, warps staging their messages";
  if (!pg) {
    set_status(a, {2, 3}, no_gpu(o));
    return;
  }
  if (digest) {
    auto dg = crypto::DigestGpu::create();
    auto run = [&] { dg->digests(payload_digest(op), pg->in_bytes(), p.span(n), pg->offsets(), pg->lengths(), n, tags.data()); };
    run();
    checked_cell(a.cell[2], all_same(nullptr, tags.data()), [&] {
      return host_rates(o, [&] {
        run();
        return double(n);
      });
    });
  } else {
    pg->run_copies(op, n, o.streams);
    checked_cell(a.cell[2], all_same(pg->out_bytes(), pg->tags()), [&] {
      return host_rates(o, [&] {
        pg->run_copies(op, n, o.streams);
        return double(n);
      });
    });
  }
  pg->run_mapped(op, n);
  checked_cell(a.cell[3], all_same(pg->out_bytes(), pg->tags()), [&] {
    return host_rates(o, [&] {
      pg->run_mapped(op, n);
      return double(n);
    });
  });
}

// RSA-2048 from bench_rsa's rows (the scan lookup: addresses independent of the key).
void rsa_row(const PaperTableOptions& o, Algo& a, const nlohmann::json& rows) {
  auto find = [&](const std::string& path, int threads) -> const nlohmann::json* {
    for (const auto& r : rows) {
      if (r.value("path", "") == path && (threads < 0 || r.value("threads", -1) == threads)) return &r;
    }
    return nullptr;
  };
  auto take = [&](Cell& c, const nlohmann::json* r, const std::string& how) {
    c.how = how;
    if (!r) {
      c.status = o.gpu ? "n/a: no such row" : no_gpu(o);
      return;
    }
    c.checked = r->contains("identical_to_openssl") && r->value("path", "") != "cpu-openssl";
    if (!r->value("identical_to_openssl", true)) {
      c.status = "MISMATCH: output differs from OpenSSL's; not timed";
      return;
    }
    c.rates = (*r)["rates_ops"].get<std::vector<double>>();
  };
  take(a.cell[0], find("cpu-openssl", o.threads), "OpenSSL raw private operation (CRT), " + std::to_string(o.threads) + " threads");
  a.cell[1].how = "none: OpenSSL's RSAZ code is already the cpu column";
  a.cell[1].status = "n/a: no batched RSA path on the CPU";
  take(a.cell[2], find("gpu h2h scan", -1), "RsaGpu::run (scan lookup): inputs copied in, kernel, outputs copied back");
  take(a.cell[3], find("gpu kernel scan", -1), "RsaGpu kernel alone (scan lookup), inputs in device memory: no mapped path");
  a.workload = "raw private-key operations (CRT), 256-B operands";
}

std::string cell_text(const Algo& a, const Cell& c) {
  if (!c.status.empty()) return c.status.substr(0, c.status.find(':'));
  char buf[48];
  const double rate = bench::median(c.rates);
  if (a.unit == "operations") {
    std::snprintf(buf, sizeof buf, "%.1f k/s", rate / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f / %.1f", rate / 1e6, rate * a.item_bytes * 8 / 1e9);
  }
  return buf;
}

}  // namespace

PaperTableResult bench_apunet(const PaperTableOptions& o, const nlohmann::json& rsa) {
  std::printf("\nbench crypto apunet: APUNet's eight algorithms (Go et al., NSDI'17) on %d CPU threads%s; "
              "lookups on %u-B packets, payloads on %u-B packets; CPU multi-buffer: %s\n",
              o.threads, o.gpu ? " and the GPU" : "", o.lookup_size, o.payload_size, CpuPayloadEngine::ipsec_mb_describe().c_str());
  std::vector<Algo> algos;
  auto add = [&](const std::string& name, double bytes, const std::string& unit) -> Algo& {
    algos.push_back(Algo{name, unit, "", bytes, {}});
    return algos.back();
  };
  lookup_row(o, add("ipv4", o.lookup_size, "packets"));
  lookup_row(o, add("ipv6", o.lookup_size, "packets"));
  dpi_row(o, add("aho-corasick", o.payload_size, "packets"));
  const Payloads p = make_payloads(o.payload_packets, o.payload_size, o.connections, 17);
  std::unique_ptr<bench::PayloadGpu> pg;
  if (o.gpu) pg = bench::PayloadGpu::create(p);
  for (PayloadOp op : {PayloadOp::kChacha20, PayloadOp::kPoly1305, PayloadOp::kSha1, PayloadOp::kSha256}) {
    Algo& a = add(op == PayloadOp::kSha256 ? "sha-2 (sha256)" : bench::payload_op_name(op), o.payload_size, "packets");
    a.workload = std::to_string(p.size()) + " messages of " + std::to_string(o.payload_size) + " B, " +
                 std::to_string(p.connections()) + " keys";
    payload_row(o, a, op, p, pg.get());
  }
  pg.reset();
  nlohmann::json rsa_rows = rsa;
  if (rsa_rows.is_null()) {
    RsaBenchOptions ro;
    ro.threads = {o.threads};
    ro.reps = o.reps;
    ro.min_seconds = o.min_seconds;
    ro.gpu = o.gpu;
    rsa_rows = bench_rsa(ro).json["rows"];
  }
  rsa_row(o, add("rsa-2048", 256, "operations"), rsa_rows);

  PaperTableResult res;
  std::printf("\nAPUNet table: Mpps / Gbit/s (RSA: operations/s); %s\n", o.gpu ? "GPU columns host to host" : no_gpu(o).c_str());
  std::printf("%-15s %6s", "algorithm", "bytes");
  for (const char* h : kColumnHead) std::printf(" %16s", h);
  std::printf("  check\n");
  nlohmann::json jrows = nlohmann::json::array();
  for (const Algo& a : algos) {
    std::printf("%-15s %6.0f", a.name.c_str(), a.item_bytes);
    std::string check = "ok";
    nlohmann::json cells = nlohmann::json::object();
    for (int c = 0; c < kColumns; ++c) {
      const Cell& x = a.cell[c];
      std::printf(" %16s", cell_text(a, x).c_str());
      const bool measured = x.status.empty() && !x.rates.empty();
      if (x.status.starts_with("MISMATCH")) {
        check = "MISMATCH";
        ++res.wrong;
      }
      const double rate = measured ? bench::median(x.rates) : 0;
      cells[kColumnKey[c]] = {{"how", x.how},
                              {"status", x.status.empty() ? nlohmann::json(nullptr) : nlohmann::json(x.status)},
                              {"checked", x.checked},
                              {"rates_per_s", x.rates},
                              {"median_per_s", measured ? nlohmann::json(rate) : nlohmann::json(nullptr)},
                              {"gbit_per_s", measured ? nlohmann::json(rate * a.item_bytes * 8 / 1e9) : nlohmann::json(nullptr)}};
    }
    std::printf("  %s\n", check.c_str());
    jrows.push_back({{"algorithm", a.name}, {"item_bytes", a.item_bytes}, {"unit", a.unit}, {"workload", a.workload}, {"cells", cells}});
  }
  std::printf("columns: cpu = the plain path, cpu-opt = batched lookup / lockstep walk / intel-ipsec-mb, gpu-copies = "
              "host to host with PCIe copies, gpu-mapped = kernel on mapped host memory (RSA: kernel alone); "
              "every cell's 'how' is in the JSON\n");
  for (const Algo& a : algos) {
    for (int c = 0; c < kColumns; ++c) {
      const std::string& st = a.cell[c].status;
      if (!st.empty() && !st.starts_with("no GPU")) std::printf("  %s %s: %s\n", a.name.c_str(), kColumnHead[c], st.c_str());
    }
  }
  res.json = {{"config", {{"threads", o.threads}, {"reps", o.reps}, {"min_seconds", o.min_seconds}, {"lookup_size", o.lookup_size},
                          {"payload_size", o.payload_size}, {"lookup_packets", o.lookup_packets},
                          {"payload_packets", o.payload_packets}, {"connections", o.connections}, {"streams", o.streams},
                          {"fib", o.fib}, {"rules", o.rules}, {"gpu", o.gpu}}},
              {"cpu_multi_buffer", CpuPayloadEngine::ipsec_mb_describe()},
              {"columns", {"cpu", "cpu_optimised", "gpu_copies", "gpu_mapped"}},
              {"rows", jrows}};
  return res;
}

}  // namespace tandem::cli
