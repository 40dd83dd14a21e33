// `tandem gen`: write generated traffic to a capture file, for other tools or for later replay.
// Frames are made and written a chunk at a time, so any count takes the same, small memory.
#include <sys/statvfs.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/table_setup.h"
#include "core/stop_signal.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

// Frames per chunk: at most ~25 MB of 1518-byte frames.
constexpr uint64_t kChunk = 16384;

struct GenOptions {
  std::string spec;
  std::string out;
  std::string fib;
};

void run_gen(const GenOptions& o) {
  const GenSpec spec = parse_gen_flag("--spec", o.spec);
  const PacketWriter::Format format = capture_format("--out", o.out);
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  if (!o.fib.empty()) {
    prefixes = prefixes_of(ipv4::load_fib(o.fib));
  } else if (spec.dst == GenSpec::Dst::kFib) {
    throw UsageError("--spec dst=fib needs --fib FILE to sample destinations from");
  }
  // A count the disk cannot hold would run for hours and then fail: refuse it first. Each frame
  // takes a 16-byte pcap record header (pcapng: 32) besides its bytes.
  const double need = static_cast<double>(spec.count) * (mean_frame_bytes(spec) + 32);
  const std::string dir = std::filesystem::absolute(o.out).parent_path().string();
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) == 0) {
    const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
    if (need > free_bytes) {
      char msg[320];
      std::snprintf(msg, sizeof msg, "--spec count=%llu: the capture would take about %.1f GB, more than the %.1f GB free in %s",
                    static_cast<unsigned long long>(spec.count), need / 1e9, free_bytes / 1e9, dir.c_str());
      throw UsageError(msg);
    }
  }
  install_stop_handler();
  const auto t0 = std::chrono::steady_clock::now();
  TrafficGenerator gen(spec, prefixes);
  PacketWriter writer(o.out, format);
  PacketStore chunk;
  uint64_t bytes = 0;
  while (gen.next(chunk, kChunk) != 0) {
    for (size_t i = 0; i < chunk.size(); ++i) {
      writer.write(chunk.frame(i), chunk.caplen[i], chunk.wire_len[i], chunk.ts_ns[i]);
    }
    bytes += chunk.total_caplen();
    if (const int sig = stop_signal()) {
      // The writer, not closed, discards its file: a capture cut short is not what was asked for.
      std::fprintf(stderr, "tandem: interrupted by %s after %llu of %llu packets: %s left as it was\n",
                   stop_signal_name(sig), static_cast<unsigned long long>(writer.packets()),
                   static_cast<unsigned long long>(spec.count), o.out.c_str());
      throw CLI::RuntimeError(128 + sig);
    }
  }
  writer.close();
  std::printf("wrote %s: %llu packets, %.1f MB (%s), in %.2f s\n", o.out.c_str(),
              static_cast<unsigned long long>(writer.packets()), bytes / 1e6, format_gen_spec(spec).c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

void register_gen(CLI::App& app) {
  auto o = std::make_shared<GenOptions>();
  CLI::App* c = app.add_subcommand("gen", "write generated traffic to a pcap or pcapng file");
  c->add_option("--spec", o->spec,
                "what to generate, e.g. count=1000000,dst=fib,flows=10000,zipf=1.1,size=imix,proto=udp,seed=1 "
                "(size = frame size with FCS, 64..1518, or imix 7:4:1 of 64/594/1518; seq=1: each frame ends with an "
                "8-byte per-flow sequence trailer after its IP datagram, checked by tests/e2e/check_order.py)")
      ->required();
  c->add_option("--out", o->out, "output file (.pcap, or .pcapng), replaced only once complete")->required();
  c->add_option("--fib", o->fib, "forwarding table to sample destinations from (dst=fib)")->check(CLI::ExistingFile);
  c->callback([o] { run_gen(*o); });
}

}  // namespace tandem::cli
