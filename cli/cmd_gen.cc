// `tandem gen`: write generated traffic to a capture file, for other tools or for later replay.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/table_setup.h"
#include "io/pcap_io.h"
#include "io/traffic_gen.h"

namespace tandem::cli {

namespace {

struct GenOptions {
  std::string spec;
  std::string out;
  std::string fib;
};

void run_gen(const GenOptions& o) {
  const GenSpec spec = parse_gen_flag("--spec", o.spec);
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;
  if (!o.fib.empty()) {
    prefixes = prefixes_of(ipv4::load_fib(o.fib));
  } else if (spec.dst == GenSpec::Dst::kFib) {
    throw UsageError("--spec dst=fib needs --fib FILE to sample destinations from");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const PacketStore store = generate(spec, prefixes);
  save_pcap(store, o.out);
  std::printf("wrote %s: %zu packets, %.1f MB (%s), in %.2f s\n", o.out.c_str(), store.size(),
              store.total_caplen() / 1e6, format_gen_spec(spec).c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

void register_gen(CLI::App& app) {
  auto o = std::make_shared<GenOptions>();
  CLI::App* c = app.add_subcommand("gen", "write generated traffic to a pcap or pcapng file");
  c->add_option("--spec", o->spec,
                "what to generate, e.g. count=1000000,dst=fib,flows=10000,zipf=1.1,size=imix,proto=udp,seed=1 "
                "(size = frame size with FCS, 64..1518, or imix 7:4:1 of 64/594/1518)")
      ->required();
  c->add_option("--out", o->out, "output file (.pcap, or .pcapng)")->required();
  c->add_option("--fib", o->fib, "forwarding table to sample destinations from (dst=fib)")->check(CLI::ExistingFile);
  c->callback([o] { run_gen(*o); });
}

}  // namespace tandem::cli
