// RSA-2048 private-key operations in `tandem bench crypto`, side by side:
//   cpu-openssl xT      OpenSSL's raw private operation (EVP_PKEY_decrypt, no padding, CRT with
//                       blinding) on T threads, each with its own context and copy of the key
//   gpu kernel <lookup>  the batch kernel alone on a batch already in device memory
//   gpu h2h <lookup>     inputs copied in, the kernel, outputs and statuses copied back
// for both window-table lookups (rsa_core.h: scan keeps addresses independent of the key, direct
// is faster and not constant-time). Before timing, the GPU's outputs for the whole batch are
// compared with OpenSSL's on a sample spread over it, and every status must say done.
#include "bench/bench_crypto_rsa.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apps/crypto/rsa_cpu.h"
#include "apps/crypto/rsa_gpu.h"
#include "bench/bench_report.h"
#include "core/machine_info.h"

namespace tandem::cli {

namespace {

using crypto::RsaPrivateKey;

constexpr size_t kCpuInputs = 4096;  // inputs the CPU rows cycle through

struct RsaRow {
  std::string path;
  int threads = 0;
  size_t batch = 0;  // GPU rows: operations per kernel
  std::vector<double> rates;
  std::vector<double> batch_ms;  // GPU rows: milliseconds per batch
  bool identical = true;
};

// Operations per second of `threads` threads, thread t doing inputs t, t + threads, ... (cycling)
// with the key each input belongs to, until min_seconds have passed.
double cpu_rate(const std::vector<RsaPrivateKey>& keys, const std::vector<uint8_t>& in, size_t count, int threads,
                double min_seconds) {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      pin_this_thread(t);
      std::vector<std::unique_ptr<crypto::RsaPrivateOp>> ops;
      for (const auto& k : keys) ops.push_back(std::make_unique<crypto::RsaPrivateOp>(k));
      uint8_t out[crypto::kRsaBytes];
      uint64_t n = 0;
      size_t i = static_cast<size_t>(t) % count;
      do {
        if (!ops[i % keys.size()]->run(&in[i * crypto::kRsaBytes], out)) failed = true;
        ++n;
        i = (i + threads) % count;
      } while (bench::seconds_since(t0) < min_seconds);
      done += n;
    });
  }
  for (auto& th : pool) th.join();
  if (failed) throw std::runtime_error("bench rsa: OpenSSL refused an input below n");
  return done / bench::seconds_since(t0);
}

// OpenSSL's outputs for the inputs at `which`, on `threads` threads.
std::vector<uint8_t> openssl_outputs(const std::vector<RsaPrivateKey>& keys, const uint8_t* in,
                                     const std::vector<size_t>& which, int threads) {
  std::vector<uint8_t> out(which.size() * crypto::kRsaBytes);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<std::unique_ptr<crypto::RsaPrivateOp>> ops;
      for (const auto& k : keys) ops.push_back(std::make_unique<crypto::RsaPrivateOp>(k));
      for (size_t j = t; j < which.size(); j += threads) {
        const size_t i = which[j];
        ops[i % keys.size()]->run(in + i * crypto::kRsaBytes, &out[j * crypto::kRsaBytes]);
      }
    });
  }
  for (auto& th : pool) th.join();
  return out;
}

const char* lookup_name(crypto::RsaTableLookup l) { return l == crypto::RsaTableLookup::kScan ? "scan" : "direct"; }

}  // namespace

RsaBenchResult bench_rsa(const RsaBenchOptions& o) {
  using crypto::kRsaBytes;
  if (o.threads.empty()) throw std::invalid_argument("bench rsa: no CPU thread counts");
  const int max_threads = std::max(1, *std::max_element(o.threads.begin(), o.threads.end()));
  const int key_count = std::max(1, o.keys);
  std::vector<RsaPrivateKey> keys;
  std::vector<crypto::RsaCrtKey> crt;
  std::vector<crypto::RsaKeyParts> parts;
  for (int k = 0; k < key_count; ++k) {
    keys.push_back(RsaPrivateKey::generate(2048));
    crt.push_back(crypto::rsa_crt_key(keys.back()));
    parts.push_back(keys.back().parts());
  }

  std::unique_ptr<crypto::RsaGpu> g;
  crypto::RsaKernelInfo info[2];
  const crypto::RsaTableLookup lookups[2] = {crypto::RsaTableLookup::kScan, crypto::RsaTableLookup::kDirect};
  size_t batch = o.batch;
  if (o.gpu) {
    // The runner is created once for its kernel's occupancy, then again at the batch's size.
    g = crypto::RsaGpu::create(crt, 1);
    for (int l = 0; l < 2; ++l) info[l] = g->kernel_info(lookups[l]);
    if (batch == 0) batch = static_cast<size_t>(4 * std::max(1LL, info[0].ops_in_flight()));
    g = crypto::RsaGpu::create(crt, batch);
  }
  const size_t inputs = std::max(batch, kCpuInputs);

  // Random inputs below n: operation i uses key i % keys; a top byte below n's keeps c < n.
  std::vector<uint8_t> in(inputs * kRsaBytes);
  bench::Rng rng{16};
  for (size_t i = 0; i < inputs; ++i) {
    uint8_t* c = &in[i * kRsaBytes];
    for (uint32_t b = 0; b < kRsaBytes; b += 8) {
      const uint64_t r = rng.next();
      std::memcpy(c + b, &r, 8);
    }
    c[0] = static_cast<uint8_t>(rng.below(parts[i % key_count].n[0]));
  }

  std::printf("bench crypto rsa: RSA-2048 private key (raw, CRT), %d key(s)", key_count);
  if (o.gpu) {
    std::printf("; GPU batch %zu (%.2f waves of %lld operations in flight)\n", batch,
                static_cast<double>(batch) / std::max(1LL, info[0].ops_in_flight()), info[0].ops_in_flight());
    for (int l = 0; l < 2; ++l) {
      std::printf("  kernel %-6s: %d registers, %zu bytes local per thread, %d blocks of %d per SM, %d SMs\n",
                  lookup_name(lookups[l]), info[l].registers, info[l].local_bytes, info[l].blocks_per_sm,
                  info[l].threads_per_block, info[l].sm_count);
    }
  } else {
    std::printf("; no GPU rows\n");
  }
  std::printf("%-9s %-18s %7s %12s %10s %9s %9s  %s\n", "workload", "path", "threads", "ops/s", "batch ms", "vs x1",
              ("vs x" + std::to_string(max_threads)).c_str(), "check");

  std::vector<RsaRow> rows;
  for (int t : o.threads) {
    RsaRow r{"cpu-openssl", t};
    for (int k = 0; k < o.reps; ++k) r.rates.push_back(cpu_rate(keys, in, kCpuInputs, t, o.min_seconds));
    rows.push_back(std::move(r));
  }
  double one = 0, most = 0;
  for (const RsaRow& r : rows) {
    if (r.threads == 1 && one == 0) one = bench::median(r.rates);
    if (r.threads == max_threads) most = bench::median(r.rates);
  }

  int wrong = 0;
  if (g) {
    std::memcpy(g->inputs(), in.data(), batch * kRsaBytes);
    for (size_t i = 0; i < batch; ++i) g->key_indices()[i] = static_cast<uint32_t>(i % key_count);
    const bool per_key = key_count > 1;
    std::vector<size_t> sample;
    const size_t check = std::min(o.check, batch);
    for (size_t j = 0; j < check; ++j) sample.push_back(j * batch / check);
    const std::vector<uint8_t> want = openssl_outputs(keys, in.data(), sample, max_threads);
    for (crypto::RsaTableLookup lookup : lookups) {
      g->run(batch, per_key, lookup);
      bool same = std::all_of(g->status(), g->status() + batch, [](uint8_t s) { return s == 1; });
      for (size_t j = 0; j < sample.size() && same; ++j) {
        same = std::memcmp(g->outputs() + sample[j] * kRsaBytes, &want[j * kRsaBytes], kRsaBytes) == 0;
      }
      wrong += !same;
      // Kernel repetitions: enough back to back for min_seconds, from a first timing.
      const double first = g->time_kernel(batch, per_key, lookup, 1);
      const int iters = std::max(1, static_cast<int>(std::ceil(o.min_seconds / std::max(first, 1e-6))));
      RsaRow k{std::string("gpu kernel ") + lookup_name(lookup), 0, batch, {}, {}, same};
      for (int r = 0; r < o.reps; ++r) {
        const double s = g->time_kernel(batch, per_key, lookup, iters);
        k.rates.push_back(batch / s);
        k.batch_ms.push_back(s * 1e3);
      }
      rows.push_back(std::move(k));
      RsaRow h{std::string("gpu h2h ") + lookup_name(lookup), 0, batch, {}, {}, same};
      for (int r = 0; r < o.reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        uint64_t n = 0;
        do {
          g->run(batch, per_key, lookup);
          n += batch;
        } while (bench::seconds_since(t0) < o.min_seconds);
        const double s = bench::seconds_since(t0);
        h.rates.push_back(n / s);
        h.batch_ms.push_back(s / (n / batch) * 1e3);
      }
      rows.push_back(std::move(h));
    }
  }

  nlohmann::json jrows = nlohmann::json::array();
  for (const RsaRow& r : rows) {
    const double rate = bench::median(r.rates);
    char ms[24] = "-";
    if (r.batch) std::snprintf(ms, sizeof ms, "%.1f", bench::median(r.batch_ms));
    std::printf("%-9s %-18s %7d %12.0f %10s %8.2fx %8.2fx  %s\n", "rsa2048", r.path.c_str(), r.threads, rate, ms,
                one > 0 ? rate / one : 0, most > 0 ? rate / most : 0,
                r.batch == 0 ? "openssl" : r.identical ? "identical" : "DIFFERENT");
    jrows.push_back({{"workload", "rsa2048"}, {"path", r.path}, {"threads", r.threads}, {"batch", r.batch},
                     {"rates_ops", r.rates}, {"median_ops", rate}, {"batch_ms", r.batch_ms},
                     {"identical_to_openssl", r.identical}});
  }
  nlohmann::json kernels = nlohmann::json::object();
  if (g) {
    for (int l = 0; l < 2; ++l) {
      kernels[lookup_name(lookups[l])] = {{"registers", info[l].registers}, {"local_bytes", info[l].local_bytes},
                                          {"blocks_per_sm", info[l].blocks_per_sm},
                                          {"threads_per_block", info[l].threads_per_block},
                                          {"ops_in_flight", info[l].ops_in_flight()}};
    }
  }
  RsaBenchResult res;
  res.wrong = wrong;
  res.json = {{"config", {{"keys", key_count}, {"batch", batch}, {"checked_ops", o.gpu ? std::min(o.check, batch) : 0},
                          {"reps", o.reps}, {"min_seconds", o.min_seconds}, {"threads", o.threads}}},
              {"kernels", kernels}, {"rows", jrows}};
  return res;
}

}  // namespace tandem::cli
