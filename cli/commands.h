// The `tandem` subcommands. Each register_* adds its subcommand and callback to the app.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace tandem::cli {

void register_run(CLI::App& app);
void register_lookup(CLI::App& app);
void register_gen(CLI::App& app);
void register_classify(CLI::App& app);
void register_match(CLI::App& app);
void register_bench_ipv4(CLI::App& bench);
void register_bench_gpu_offload(CLI::App& bench);
void register_bench_gpu_load(CLI::App& bench);
void register_bench_gpu_stream(CLI::App& bench);
void register_bench_gpu_router(CLI::App& bench);
void register_bench_gopt(CLI::App& bench);
void register_bench_memory(CLI::App& bench);
void register_bench_anchors(CLI::App& bench);
void register_bench_cores(CLI::App& bench);
void register_bench_lookup(CLI::App& bench);
void register_bench_classify(CLI::App& bench);
void register_bench_fw_router(CLI::App& bench);
void register_bench_dpi(CLI::App& bench);

// Thrown by commands for user-facing failures: printed as "tandem: error: <msg>", exit code 1.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Random 32-bit addresses from a fixed seed (splitmix64), identical on every platform.
void fill_uniform_addresses(uint32_t* out, size_t n, uint64_t seed);

}  // namespace tandem::cli
