// `tandem bench crypto --batch-sweep`: Koromilas et al.'s Fig. 3 for its two crypto workloads,
// AES-128-CBC with one key per connection (plain CBC over each packet's bytes zero-padded to the
// block size, no HMAC: the paper's encryption workload, not the ESP path) and MD5 over each packet,
// per batch size (64 to 64Ki packets by default, powers of 4):
//   gpu copies         one batch at a time, host to host: AES-CBC through bench_crypto_kernels.cu
//                      (copy in, kernel, copy out on one stream), MD5 through crypto::DigestGpu;
//                      latency = one round trip, throughput = batch / latency
//   cpu-openssl x1/xT  the same batch split over 1 and T threads (OpenSSL, one message at a time),
//                      the threads meeting at a barrier after each batch: latency = one batch
//   cpu-ipsec-mb xT    AES-CBC only: intel-ipsec-mb's multi-buffer jobs (MD5 has no plain-hash job)
// The GPU's outputs of every batch are compared with OpenSSL's before timing.
//
// Also the CPU side both paper tables share (bench_crypto_apunet.h): the payloads and the engines.
#include <openssl/evp.h>
#if TANDEM_HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#endif

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apps/crypto/digest_cpu.h"
#include "apps/crypto/digest_gpu.h"
#include "apps/ipsec/esp_ipsecmb.h"
#include "bench/bench_crypto_apunet.h"
#include "bench/bench_report.h"
#include "core/machine_info.h"
#include "core/usage_error.h"

namespace tandem::bench {

uint8_t* Payloads::add(uint32_t len, uint32_t connection, const uint8_t* from) {
  const size_t at = bytes.size();  // a multiple of 16
  bytes.resize(at + (size_t{len} + 15) / 16 * 16, 0);
  if (from && len) std::memcpy(bytes.data() + at, from, len);
  offset.push_back(static_cast<uint32_t>(at));
  length.push_back(len);
  conn.push_back(connection);
  iv.resize(iv.size() + 16, 0);
  return bytes.data() + at;
}

}  // namespace tandem::bench

namespace tandem::cli {

using bench::PayloadOp;
using bench::Payloads;

bench::Payloads make_payloads(size_t n, uint32_t len, uint32_t connections, uint64_t seed) {
  bench::Rng rng{seed};
  auto fill = [&](uint8_t* p, size_t bytes) {
    for (size_t i = 0; i < bytes; i += 8) {
      const uint64_t r = rng.next();
      std::memcpy(p + i, &r, std::min<size_t>(8, bytes - i));
    }
  };
  Payloads p;
  p.bytes.reserve(n * ((size_t{len} + 15) / 16 * 16));
  p.keys.resize(32 * size_t{std::max(connections, 1u)});
  fill(p.keys.data(), p.keys.size());
  for (size_t k = 0; k < n; ++k) fill(p.add(len, static_cast<uint32_t>(k % std::max(connections, 1u))), len);
  fill(p.iv.data(), p.iv.size());
  return p;
}

// ---- the CPU engines ----

crypto::DigestAlgo payload_digest(PayloadOp op) {
  return op == PayloadOp::kMd5 ? crypto::DigestAlgo::kMd5 : op == PayloadOp::kSha1 ? crypto::DigestAlgo::kSha1
                                                                                   : crypto::DigestAlgo::kSha256;
}

namespace {

#if TANDEM_HAVE_IPSEC_MB
struct alignas(16) AesSchedule {
  uint32_t enc[4 * 15];
  uint32_t dec[4 * 15];
};
#endif

}  // namespace

struct CpuPayloadEngine::Impl {
  Kind kind;
  PayloadOp op;
  const Payloads* p;
  EVP_CIPHER* cipher = nullptr;
  EVP_CIPHER_CTX* ctx = nullptr;
  std::vector<EVP_CIPHER_CTX*> conn_ctx;  // AES-CBC: one per connection, its key set once
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* mac_ctx = nullptr;
#if TANDEM_HAVE_IPSEC_MB
  IMB_MGR* mgr = nullptr;
  std::vector<AesSchedule> aes;
#endif
  ~Impl() {
    EVP_CIPHER_CTX_free(ctx);
    for (EVP_CIPHER_CTX* c : conn_ctx) EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(cipher);
    EVP_MAC_CTX_free(mac_ctx);
    EVP_MAC_free(mac);
#if TANDEM_HAVE_IPSEC_MB
    if (mgr) free_mb_mgr(mgr);
#endif
  }
  void openssl(size_t b, size_t e, uint8_t* out, uint8_t* tags);
  void ipsec_mb(size_t b, size_t e, uint8_t* out, uint8_t* tags);
};

bool CpuPayloadEngine::supports(Kind k, PayloadOp op) {
  if (op == PayloadOp::kAhoCorasick) return false;
  if (k == Kind::kOpenssl) return true;
#if TANDEM_HAVE_IPSEC_MB
  return op != PayloadOp::kMd5 && ipsec::EspIpsecMb::available();  // the library has HMAC-MD5 only
#else
  return false;
#endif
}

std::string CpuPayloadEngine::ipsec_mb_describe() { return ipsec::EspIpsecMb::describe(); }

CpuPayloadEngine::CpuPayloadEngine(Kind k, PayloadOp op, const Payloads& p) : impl_(std::make_unique<Impl>()) {
  if (!supports(k, op)) throw std::invalid_argument(std::string("no CPU path for ") + bench::payload_op_name(op));
  Impl& m = *impl_;
  m.kind = k;
  m.op = op;
  m.p = &p;
  auto need = [](bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("OpenSSL: ") + what);
  };
  if (k == Kind::kOpenssl) {
    if (op == PayloadOp::kChacha20 || op == PayloadOp::kAes128Cbc) {
      need((m.cipher = EVP_CIPHER_fetch(nullptr, op == PayloadOp::kChacha20 ? "ChaCha20" : "AES-128-CBC", nullptr)), "no cipher");
      need((m.ctx = EVP_CIPHER_CTX_new()), "no context");
    }
    if (op == PayloadOp::kAes128Cbc) {
      for (size_t c = 0; c < p.connections(); ++c) {
        EVP_CIPHER_CTX* x = EVP_CIPHER_CTX_new();
        need(x, "no context");
        m.conn_ctx.push_back(x);
        need(EVP_EncryptInit_ex2(x, m.cipher, &p.keys[32 * c], nullptr, nullptr) == 1, "AES key");
        EVP_CIPHER_CTX_set_padding(x, 0);
      }
    }
    if (op == PayloadOp::kPoly1305) {
      need((m.mac = EVP_MAC_fetch(nullptr, "POLY1305", nullptr)), "no Poly1305");
      need((m.mac_ctx = EVP_MAC_CTX_new(m.mac)), "no MAC context");
    }
    return;
  }
#if TANDEM_HAVE_IPSEC_MB
  IMB_ARCH arch;
  m.mgr = alloc_mb_mgr(0);
  if (!m.mgr) throw std::runtime_error("intel-ipsec-mb: cannot allocate a manager");
  init_mb_mgr_auto(m.mgr, &arch);
  if (imb_get_errno(m.mgr) != 0 || arch == IMB_ARCH_NONE) throw std::runtime_error("intel-ipsec-mb cannot run here");
  if (op == PayloadOp::kAes128Cbc) {
    m.aes.resize(p.connections());
    for (size_t c = 0; c < m.aes.size(); ++c) IMB_AES_KEYEXP_128(m.mgr, &p.keys[32 * c], m.aes[c].enc, m.aes[c].dec);
  }
#endif
}

CpuPayloadEngine::~CpuPayloadEngine() = default;

void CpuPayloadEngine::run(size_t b, size_t e, uint8_t* out, uint8_t* tags) {
  if (impl_->kind == Kind::kOpenssl) {
    impl_->openssl(b, e, out, tags);
  } else {
    impl_->ipsec_mb(b, e, out, tags);
  }
}

void CpuPayloadEngine::Impl::openssl(size_t b, size_t e, uint8_t* out, uint8_t* tags) {
  const uint32_t tb = bench::payload_tag_bytes(op);
  for (size_t k = b; k < e; ++k) {
    const uint8_t* in = p->msg(k);
    const uint32_t len = p->length[k];
    const uint8_t* key = &p->keys[32 * size_t{p->conn[k]}];
    const uint8_t* iv = &p->iv[16 * k];
    int outl = 0;
    size_t tl = 0;
    bool ok = true;
    switch (op) {
      case PayloadOp::kChacha20: {
        uint8_t counter_nonce[16] = {1};  // OpenSSL's IV: the 32-bit block counter (1, little-endian), the nonce
        std::memcpy(counter_nonce + 4, iv, 12);
        ok = EVP_EncryptInit_ex2(ctx, cipher, key, counter_nonce, nullptr) == 1 &&
             EVP_EncryptUpdate(ctx, out + p->offset[k], &outl, in, static_cast<int>(len)) == 1;
        break;
      }
      case PayloadOp::kAes128Cbc: {
        EVP_CIPHER_CTX* c = conn_ctx[p->conn[k]];
        ok = EVP_EncryptInit_ex2(c, nullptr, nullptr, iv, nullptr) == 1 &&
             EVP_EncryptUpdate(c, out + p->offset[k], &outl, in, static_cast<int>(bench::payload_cipher_bytes(op, len))) == 1;
        break;
      }
      case PayloadOp::kPoly1305:
        ok = EVP_MAC_init(mac_ctx, key, 32, nullptr) == 1 && EVP_MAC_update(mac_ctx, in, len) == 1 &&
             EVP_MAC_final(mac_ctx, tags + k * tb, &tl, tb) == 1;
        break;
      default: crypto::openssl_digest(payload_digest(op), in, len, tags + k * tb);
    }
    if (!ok) throw std::runtime_error(std::string("OpenSSL failed on ") + bench::payload_op_name(op));
  }
}

void CpuPayloadEngine::Impl::ipsec_mb(size_t b, size_t e, uint8_t* out, uint8_t* tags) {
#if TANDEM_HAVE_IPSEC_MB
  const uint32_t tb = bench::payload_tag_bytes(op);
  size_t failed = 0;
  auto retire = [&](IMB_JOB* j) { failed += j->status != IMB_STATUS_COMPLETED; };
  // Every field a job of this kind reads is set: a job slot keeps what its previous job left.
  for (size_t k = b; k < e; ++k) {
    IMB_JOB* job = IMB_GET_NEXT_JOB(mgr);
    const uint32_t len = p->length[k];
    const uint8_t* key = &p->keys[32 * size_t{p->conn[k]}];
    job->src = p->msg(k);
    job->dst = out + p->offset[k];
    job->cipher_direction = IMB_DIR_ENCRYPT;
    job->chain_order = tb ? IMB_ORDER_HASH_CIPHER : IMB_ORDER_CIPHER_HASH;
    job->cipher_start_src_offset_in_bytes = 0;
    job->hash_start_src_offset_in_bytes = 0;
    job->msg_len_to_cipher_in_bytes = tb ? 0 : bench::payload_cipher_bytes(op, len);
    job->msg_len_to_hash_in_bytes = tb ? len : 0;
    job->iv = &p->iv[16 * k];
    job->auth_tag_output = tb ? tags + k * tb : nullptr;
    job->auth_tag_output_len_in_bytes = tb;
    job->cipher_mode = tb ? IMB_CIPHER_NULL : op == PayloadOp::kChacha20 ? IMB_CIPHER_CHACHA20 : IMB_CIPHER_CBC;
    job->hash_alg = op == PayloadOp::kPoly1305 ? IMB_AUTH_POLY1305 : op == PayloadOp::kSha1 ? IMB_AUTH_SHA_1
                    : op == PayloadOp::kSha256 ? IMB_AUTH_SHA_256 : IMB_AUTH_NULL;
    job->iv_len_in_bytes = op == PayloadOp::kChacha20 ? 12 : op == PayloadOp::kAes128Cbc ? 16 : 0;
    job->key_len_in_bytes = op == PayloadOp::kChacha20 ? 32 : op == PayloadOp::kAes128Cbc ? 16 : 0;
    job->enc_keys = op == PayloadOp::kAes128Cbc ? aes[p->conn[k]].enc : static_cast<const void*>(key);
    job->dec_keys = op == PayloadOp::kAes128Cbc ? aes[p->conn[k]].dec : static_cast<const void*>(key);
    if (op == PayloadOp::kPoly1305) job->u.POLY1305._key = key;
    for (IMB_JOB* done = IMB_SUBMIT_JOB(mgr); done != nullptr; done = IMB_GET_COMPLETED_JOB(mgr)) retire(done);
  }
  while (IMB_JOB* done = IMB_FLUSH_JOB(mgr)) retire(done);
  if (failed) throw std::runtime_error("intel-ipsec-mb refused " + std::to_string(failed) + " jobs");
#else
  (void)b, (void)e, (void)out, (void)tags;
  throw std::logic_error("built without intel-ipsec-mb");
#endif
}

CpuRounds cpu_payload_rounds(CpuPayloadEngine::Kind k, PayloadOp op, const Payloads& p, size_t n, int threads,
                             double min_seconds, bool lockstep) {
  threads = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  std::vector<uint8_t> out(p.span(n)), tags(n * 32);
  std::atomic<uint64_t> done{0}, rounds{0};
  std::atomic<bool> stop{false}, failed{false};
  // The clock starts once every thread has its engine (AES: a context per connection).
  std::chrono::steady_clock::time_point t0;
  std::barrier ready(threads, [&]() noexcept { t0 = std::chrono::steady_clock::now(); });
  // With lockstep, the barrier's completion (one thread, once per round) decides whether to stop.
  std::barrier sync(threads, [&]() noexcept {
    ++rounds;
    stop = failed || bench::seconds_since(t0) >= min_seconds;
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      pin_this_thread(t);
      const size_t b = n * t / threads, e = n * (t + 1) / threads;
      bool started = false;
      try {
        CpuPayloadEngine eng(k, op, p);
        ready.arrive_and_wait();
        started = true;
        uint64_t local = 0;
        for (;;) {
          eng.run(b, e, out.data(), tags.data());
          local += e - b;
          if (lockstep) {
            sync.arrive_and_wait();
            if (stop) break;
          } else if (failed || bench::seconds_since(t0) >= min_seconds) {
            if (t == 0) rounds = local / std::max<size_t>(e - b, 1);
            break;
          }
        }
        done += local;
      } catch (const std::exception&) {
        failed = true;
        if (!started) ready.arrive_and_drop();
        if (lockstep) sync.arrive_and_drop();
      }
    });
  }
  for (auto& th : pool) th.join();
  if (failed) throw std::runtime_error(std::string("CPU ") + bench::payload_op_name(op) + " failed");
  const double s = bench::seconds_since(t0);
  return {done / s, s / std::max<uint64_t>(rounds, 1)};
}

bool same_payload_output(PayloadOp op, const Payloads& p, size_t k, const uint8_t* out_a, const uint8_t* tags_a,
                         const uint8_t* out_b, const uint8_t* tags_b) {
  const uint32_t tb = bench::payload_tag_bytes(op);
  if (tb) return std::memcmp(tags_a + k * tb, tags_b + k * tb, tb) == 0;
  return std::memcmp(out_a + p.offset[k], out_b + p.offset[k], bench::payload_cipher_bytes(op, p.length[k])) == 0;
}

// ---- the sweep ----

namespace {

struct SweepRow {
  std::string algorithm, path;
  int threads = 0;  // 0: the GPU
  size_t batch = 0;
  std::vector<double> rates;    // messages per second, one per repetition
  std::vector<double> latency;  // seconds per batch, one per repetition
  std::string status;           // "" when measured; else why not
  bool checked = false;
};

std::string path_label(const SweepRow& r) {
  return r.threads ? r.path + " x" + std::to_string(r.threads) : r.path;
}

}  // namespace

PaperTableResult bench_crypto_sweep(const PaperTableOptions& o) {
  std::vector<size_t> batches;
  for (const std::string& b : bench::split_list(o.batches)) {
    size_t n = 0, used = 0;
    try {
      n = std::stoul(b, &used);
    } catch (const std::exception&) {
    }
    if (used != b.size() || n == 0 || n > (size_t{1} << 22)) throw UsageError("--sweep-batches: " + b + " is not in 1..4194304");
    batches.push_back(n);
  }
  if (batches.empty()) throw UsageError("--sweep-batches: no batch sizes");
  const size_t most = *std::max_element(batches.begin(), batches.end());
  const Payloads p = make_payloads(most, o.sweep_size, o.connections, 23);
  std::unique_ptr<bench::PayloadGpu> pg;
  std::unique_ptr<crypto::DigestGpu> dg;
  if (o.gpu) {
    pg = bench::PayloadGpu::create(p);
    dg = crypto::DigestGpu::create();
  }
  std::printf("\nbench crypto batch sweep (Koromilas et al. Fig. 3): %u-B packets, %zu keys, batches %s; %s\n", o.sweep_size,
              p.connections(), o.batches.c_str(), o.gpu ? "GPU one batch at a time, host to host" : ("no GPU: " + o.gpu_why).c_str());
  using Kind = CpuPayloadEngine::Kind;
  std::vector<SweepRow> rows;
  PaperTableResult res;
  std::vector<uint8_t> want(p.span(most)), want_tags(most * 32), out(p.span(most)), tags(most * 32);
  for (PayloadOp op : {PayloadOp::kAes128Cbc, PayloadOp::kMd5}) {
    const std::string name = bench::payload_op_name(op);
    CpuPayloadEngine(Kind::kOpenssl, op, p).run(0, most, want.data(), want_tags.data());
    auto same = [&](size_t n, const uint8_t* o_out, const uint8_t* o_tags) {
      for (size_t k = 0; k < n; ++k) {
        if (!same_payload_output(op, p, k, want.data(), want_tags.data(), o_out, o_tags)) return false;
      }
      return true;
    };
    // intel-ipsec-mb is checked once, over the largest batch.
    const bool mb = CpuPayloadEngine::supports(Kind::kIpsecMb, op);
    bool mb_same = true;
    if (mb) {
      CpuPayloadEngine(Kind::kIpsecMb, op, p).run(0, most, out.data(), tags.data());
      mb_same = same(most, out.data(), tags.data());
    }
    std::vector<SweepRow> mine;
    for (size_t n : batches) {
      SweepRow g{name, "gpu copies", 0, n};
      if (!o.gpu) {
        g.status = "no GPU: " + o.gpu_why;
      } else {
        auto run = [&] {
          if (op == PayloadOp::kMd5) {
            dg->digests(crypto::DigestAlgo::kMd5, pg->in_bytes(), p.span(n), pg->offsets(), pg->lengths(), n, tags.data());
          } else {
            pg->run_copies(op, n, 1);
          }
        };
        run();
        g.checked = true;
        if (!(op == PayloadOp::kMd5 ? same(n, nullptr, tags.data()) : same(n, pg->out_bytes(), nullptr))) {
          g.status = "MISMATCH: output differs from OpenSSL's; not timed";
        }
        for (int r = 0; r < o.reps && g.status.empty(); ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          uint64_t rounds = 0;
          do {
            run();
            ++rounds;
          } while (bench::seconds_since(t0) < o.min_seconds);
          const double s = bench::seconds_since(t0) / rounds;
          g.latency.push_back(s);
          g.rates.push_back(n / s);
        }
      }
      mine.push_back(std::move(g));
      std::vector<std::pair<Kind, int>> cpus = {{Kind::kOpenssl, 1}, {Kind::kOpenssl, o.threads}};
      if (o.threads == 1) cpus.pop_back();
      if (mb) cpus.push_back({Kind::kIpsecMb, o.threads});
      for (auto [kind, t] : cpus) {
        SweepRow c{name, kind == Kind::kOpenssl ? "cpu-openssl" : "cpu-ipsec-mb", t, n};
        c.checked = kind == Kind::kIpsecMb;
        if (!mb_same && kind == Kind::kIpsecMb) c.status = "MISMATCH: output differs from OpenSSL's; not timed";
        for (int r = 0; r < o.reps && c.status.empty(); ++r) {
          const CpuRounds x = cpu_payload_rounds(kind, op, p, n, t, o.min_seconds, true);
          c.rates.push_back(x.per_s);
          c.latency.push_back(x.round_s);
        }
        mine.push_back(std::move(c));
      }
    }
    // The table: a row per batch size, a column (Gbit/s, ms per batch) per path.
    std::vector<std::string> paths;
    for (const SweepRow& r : mine) {
      if (std::find(paths.begin(), paths.end(), path_label(r)) == paths.end()) paths.push_back(path_label(r));
    }
    std::printf("\n%s: Gbit/s and latency per batch (ms)\n%8s", name.c_str(), "batch");
    for (const std::string& h : paths) std::printf(" | %-19s", h.c_str());
    std::printf("\n");
    for (size_t n : batches) {
      std::printf("%8zu", n);
      for (const std::string& h : paths) {
        for (const SweepRow& r : mine) {
          if (r.batch != n || path_label(r) != h) continue;
          if (!r.status.empty()) {
            std::printf(" | %-19s", r.status.substr(0, r.status.find(':')).c_str());
          } else {
            std::printf(" | %8.2f %10.3f", bench::median(r.rates) * o.sweep_size * 8 / 1e9, bench::median(r.latency) * 1e3);
          }
        }
      }
      std::printf("\n");
    }
    for (SweepRow& r : mine) {
      res.wrong += r.status.starts_with("MISMATCH");
      rows.push_back(std::move(r));
    }
  }
  nlohmann::json jrows = nlohmann::json::array();
  for (const SweepRow& r : rows) {
    const bool measured = r.status.empty() && !r.rates.empty();
    const double rate = bench::median(r.rates);
    std::vector<double> ms;
    for (double s : r.latency) ms.push_back(s * 1e3);
    jrows.push_back({{"algorithm", r.algorithm}, {"path", r.path}, {"threads", r.threads}, {"batch", r.batch},
                     {"rates_per_s", r.rates}, {"latencies_ms", ms}, {"checked", r.checked},
                     {"status", r.status.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.status)},
                     {"median_per_s", measured ? nlohmann::json(rate) : nlohmann::json(nullptr)},
                     {"gbit_per_s", measured ? nlohmann::json(rate * o.sweep_size * 8 / 1e9) : nlohmann::json(nullptr)},
                     {"latency_ms", measured ? nlohmann::json(bench::median(ms)) : nlohmann::json(nullptr)}});
  }
  res.json = {{"config", {{"batches", batches}, {"packet_bytes", o.sweep_size}, {"connections", p.connections()},
                          {"threads", o.threads}, {"reps", o.reps}, {"min_seconds", o.min_seconds}, {"gpu", o.gpu},
                          {"aes", "AES-128-CBC over each packet zero-padded to 16 B, one key per connection, no HMAC"}}},
              {"rows", jrows}};
  return res;
}

}  // namespace tandem::cli
