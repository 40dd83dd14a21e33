// The `tandem` subcommands. Each register_* adds its subcommand and callback to the app.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/usage_error.h"

namespace tandem::cli {

void register_run(CLI::App& app);
void register_lookup(CLI::App& app);
void register_apps(CLI::App& app);
void register_gen(CLI::App& app);
void register_classify(CLI::App& app);
void register_match(CLI::App& app);
void register_advise(CLI::App& app);
void register_scenario(CLI::App& app);
void register_hog_gpu(CLI::App& app);
void register_ctl(CLI::App& app);
void register_bench_ipv4(CLI::App& bench);
void register_bench_io(CLI::App& bench);
void register_bench_gpu_offload(CLI::App& bench);
void register_bench_gpu_load(CLI::App& bench);
void register_bench_gpu_stream(CLI::App& bench);
void register_bench_gpu_router(CLI::App& bench);
void register_bench_gpu_frames(CLI::App& bench);
void register_bench_gpu_path(CLI::App& bench);
void register_bench_schedule(CLI::App& bench);
void register_bench_crypto(CLI::App& bench);
void register_bench_gopt(CLI::App& bench);
void register_bench_memory(CLI::App& bench);
void register_bench_anchors(CLI::App& bench);
void register_bench_cores(CLI::App& bench);
void register_bench_lookup(CLI::App& bench);
void register_bench_classify(CLI::App& bench);
void register_bench_fw_router(CLI::App& bench);
void register_bench_dpi(CLI::App& bench);

// A floating-point flag's check: a finite number in [lo, hi]. CLI::Range compares with < and >,
// which NaN passes, so every floating-point flag uses this instead.
inline CLI::Validator FiniteRange(double lo, double hi) {
  char desc[64];
  std::snprintf(desc, sizeof desc, "FLOAT in [%g - %g]", lo, hi);
  return CLI::Validator(
      [lo, hi, range = std::string(desc + 9)](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) {
          return "Value " + s + " is not a finite number in " + range;
        }
        return {};
      },
      desc);
}

using tandem::UsageError;

// Random 32-bit addresses from a fixed seed (splitmix64), identical on every platform.
void fill_uniform_addresses(uint32_t* out, size_t n, uint64_t seed);

}  // namespace tandem::cli
