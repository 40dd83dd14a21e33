// The two paper tables of `tandem bench crypto`, and the CPU side they share:
//   --apunet       APUNet's eight algorithms (Go et al., NSDI'17): CPU, CPU optimised, GPU with
//                  copies, GPU mapped (bench_crypto_apunet.cc)
//   --batch-sweep  Koromilas et al. Fig. 3: AES-128-CBC and MD5 on the GPU, throughput and latency
//                  per batch size, against the CPU (bench_crypto_sweep.cc)
// The GPU kernels of the payload algorithms are bench_crypto_kernels.h's.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "apps/crypto/digest_core.h"
#include "bench/bench_crypto_kernels.h"

namespace tandem::cli {

struct PaperTableOptions {
  int threads = 1;           // the CPU columns' threads ("all cores": the most of --threads)
  int reps = 3;              // repetitions per cell, the median reported
  double min_seconds = 0.5;  // least duration of a repetition
  bool gpu = true;           // GPU columns (the caller has checked that a GPU is usable)
  std::string gpu_why;       // why not, when !gpu
  uint32_t connections = 1024;  // keys: one per connection
  // --apunet
  std::string fib = "data/fib/iprbench_tier1_fulltable_prefixes.txt.gz";
  std::string rules = "data/ids/et_open_2019-04-15";  // a rule file, or a folder of *.rules[.gz]
  uint32_t lookup_size = 64;      // frame bytes (with FCS) of the lookup rows
  uint32_t payload_size = 1514;   // bytes of a payload row's packet
  uint32_t lookup_packets = 1u << 20;
  uint32_t payload_packets = 65536;  // also the GPU batch of the payload rows (one thread each)
  int streams = 4;                   // GPU copies: streams a batch is split over
  // --batch-sweep
  std::string batches = "64,256,1024,4096,16384,65536";
  uint32_t sweep_size = 1514;
};

struct PaperTableResult {
  nlohmann::json json;
  int wrong = 0;  // cells whose output differed from the reference (not timed)
};

// Prints the table and returns its JSON. `rsa` is the "rows" array bench_rsa (bench_crypto_rsa.h)
// already made with `threads` among its thread counts, or null to run bench_rsa here.
PaperTableResult bench_apunet(const PaperTableOptions& o, const nlohmann::json& rsa);
PaperTableResult bench_crypto_sweep(const PaperTableOptions& o);

// The CPU side both tables share is bench_crypto_sweep.cc's.

// MD5, SHA-1 or SHA-256 of a digest op.
crypto::DigestAlgo payload_digest(bench::PayloadOp op);

// n messages of len random bytes over `connections` random keys (message k on connection
// k % connections), each with a random IV: the payload rows' input.
bench::Payloads make_payloads(size_t n, uint32_t len, uint32_t connections, uint64_t seed);

// One thread's CPU path for a payload algorithm (not Aho-Corasick):
//   kOpenssl  OpenSSL, one message at a time: EVP ChaCha20 (key and IV set per message), EVP_MAC
//             Poly1305, EVP_Digest (crypto::openssl_digest), AES-128-CBC on one EVP context per
//             connection (key set once, IV per message)
//   kIpsecMb  intel-ipsec-mb's job API, the whole range in flight (its multi-buffer lanes
//             interleave messages): ChaCha20, Poly1305, SHA-1, SHA-256, AES-128-CBC
class CpuPayloadEngine {
 public:
  enum class Kind { kOpenssl, kIpsecMb };
  // Whether this build and CPU can run `op` on that path.
  static bool supports(Kind k, bench::PayloadOp op);
  static std::string ipsec_mb_describe();
  CpuPayloadEngine(Kind k, bench::PayloadOp op, const bench::Payloads& p);
  ~CpuPayloadEngine();
  CpuPayloadEngine(const CpuPayloadEngine&) = delete;
  CpuPayloadEngine& operator=(const CpuPayloadEngine&) = delete;
  // Messages [b, e): a cipher's output to out + offset[k], a tag to tags + k * payload_tag_bytes.
  // Throws std::runtime_error when the library fails.
  void run(size_t b, size_t e, uint8_t* out, uint8_t* tags);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The first n messages of `p` on `threads` threads pinned to CPUs 0.., thread t taking the t-th
// contiguous share, in rounds until min_seconds have passed; with `lockstep` every round ends at a
// barrier, so that a round is one batch's latency on all the threads together.
struct CpuRounds {
  double per_s = 0;    // messages per second
  double round_s = 0;  // seconds per round
};
CpuRounds cpu_payload_rounds(CpuPayloadEngine::Kind k, bench::PayloadOp op, const bench::Payloads& p, size_t n,
                             int threads, double min_seconds, bool lockstep);

// Outputs of message k of two runs compared: `a` and `b` are (out, tags) pairs of the same layout.
bool same_payload_output(bench::PayloadOp op, const bench::Payloads& p, size_t k, const uint8_t* out_a,
                         const uint8_t* tags_a, const uint8_t* out_b, const uint8_t* tags_b);

}  // namespace tandem::cli
