// The RSA rows of `tandem bench crypto`: RSA-2048 private-key operations (raw, CRT), the workload
// of an SSL/TLS server's handshakes, on the CPU through OpenSSL and on the GPU (rsa_gpu.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <vector>

namespace tandem::cli {

struct RsaBenchOptions {
  std::vector<int> threads = {1};  // CPU thread counts, one row each
  size_t batch = 0;                // GPU operations per batch; 0: four waves of what the GPU holds at once
  int keys = 1;                    // distinct keys; above 1 every operation names its key (key i % keys)
  size_t check = 2048;             // operations checked against OpenSSL before timing (spread over the batch)
  int reps = 3;                    // repetitions per row, the median reported
  double min_seconds = 0.5;        // least duration of a repetition
  bool gpu = true;                 // GPU rows (the caller has checked that a GPU is usable)
};

struct RsaBenchResult {
  nlohmann::json json;  // {"config": {...}, "kernels": {...}, "rows": [...]}
  int wrong = 0;        // GPU rows whose outputs differed from OpenSSL's
};

// Prints a header and one row per path: cpu-openssl on each thread count, then per table lookup
// (scan: addresses independent of the key; direct: faster, not constant-time) the GPU kernel alone
// and host to host. Rates are operations per second; "vs xN" compares with the CPU row of the most
// threads. Throws std::runtime_error if OpenSSL fails, gpu::GpuError on a GPU failure.
RsaBenchResult bench_rsa(const RsaBenchOptions& o);

}  // namespace tandem::cli
