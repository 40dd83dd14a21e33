// tandem: packet processing on CPUs and GPUs. See README.md and `tandem --help`.
#include <cstdio>
#include <exception>

#include "apps/ipv4/fib_loader.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "cli/crash_report.h"
#include "cli/output_guard.h"
#include "core/flow_hash.h"
#include "gpu/gpu_runtime.h"
#include "io/io_error.h"

namespace tandem::cli {

void fill_uniform_addresses(uint32_t* out, size_t n, uint64_t seed) {
  uint64_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    s += 0x9e3779b97f4a7c15ULL;
    out[i] = static_cast<uint32_t>(mix64(s) >> 16);
  }
}

}  // namespace tandem::cli

int main(int argc, char** argv) {
  tandem::cli::install_crash_report();
  CLI::App app{"tandem: packet processing on CPUs and GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tandem 0.1.0");
  tandem::cli::register_run(app);
  tandem::cli::register_lookup(app);
  tandem::cli::register_apps(app);
  tandem::cli::register_gen(app);
  tandem::cli::register_classify(app);
  tandem::cli::register_match(app);
  tandem::cli::register_advise(app);
  tandem::cli::register_scenario(app);
  tandem::cli::register_hog_gpu(app);
  tandem::cli::register_ctl(app);
  CLI::App* bench = app.add_subcommand("bench", "benchmarks: print a table, write JSON");
  bench->require_subcommand(1);
  bench->add_option("--min-seconds", tandem::bench::min_rep_seconds(),
                    "least duration of a timed repetition in the benches that repeat a call (ipv4, anchors, lookup, "
                    "classify, fw-router, gopt, dpi; cores, crypto, gpu-path, gpu-frames and schedule have "
                    "their own --min-seconds)")
      ->capture_default_str()->check(CLI::Range(0.0, 600.0));
  tandem::cli::register_bench_ipv4(*bench);
  tandem::cli::register_bench_io(*bench);
  tandem::cli::register_bench_gpu_offload(*bench);
  tandem::cli::register_bench_gpu_load(*bench);
  tandem::cli::register_bench_gpu_stream(*bench);
  tandem::cli::register_bench_gpu_router(*bench);
  tandem::cli::register_bench_gpu_frames(*bench);
  tandem::cli::register_bench_gpu_path(*bench);
  tandem::cli::register_bench_schedule(*bench);
  tandem::cli::register_bench_crypto(*bench);
  tandem::cli::register_bench_gopt(*bench);
  tandem::cli::register_bench_memory(*bench);
  tandem::cli::register_bench_anchors(*bench);
  tandem::cli::register_bench_cores(*bench);
  tandem::cli::register_bench_lookup(*bench);
  tandem::cli::register_bench_classify(*bench);
  tandem::cli::register_bench_fw_router(*bench);
  tandem::cli::register_bench_dpi(*bench);
  tandem::cli::guard_outputs(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // the command already said what went wrong
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // unknown flag, missing option, bad value: CLI11 names it
  } catch (const tandem::ipv4::FibError& e) {
    std::fprintf(stderr, "tandem: error: forwarding table: %s\n", e.what());
    return 1;
  } catch (const tandem::IoError& e) {
    std::fprintf(stderr, "tandem: error: %s\n", e.what());
    return 1;
  } catch (const tandem::gpu::GpuError& e) {
    std::fprintf(stderr, "tandem: error: GPU: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
