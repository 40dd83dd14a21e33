// The ipsec app: an ESP tunnel-mode gateway (ipsec_app.h) over an SA file or generated SAs.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_gen.h"
#include "apps/registry.h"
#include "core/table_reader.h"
#include "io/flow_traffic.h"

namespace tandem::ipsec {
namespace {

// Slots for SAs added while running (tandem ctl add): a few hundred bytes each, taken or not.
constexpr uint64_t kDefaultSaRoom = 1024;
constexpr uint64_t kMaxSaRoom = 1u << 20;

struct IpsecState : AppState {
  std::unique_ptr<SaTable> table;
};

LoadedApp load(const AppArgs& args) {
  if (args.has("sa") == args.has("sa-gen")) throw UsageError("--app ipsec needs --sa FILE or --sa-gen N");
  if (args.has("sa-cipher") && !args.has("sa-gen")) throw UsageError("--sa-cipher is for --sa-gen");
  auto st = std::make_unique<IpsecState>();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    SaFile f = args.has("sa") ? load_sa_file(args.text("sa"))
                              : generated_sas(args.integer("sa-gen", 0), cipher_by_name(args.text("sa-cipher", "aes-128-cbc")),
                                              args.integer("sa-seed", 1));
    st->table = std::make_unique<SaTable>(std::move(f), static_cast<uint32_t>(args.integer("sa-room", kDefaultSaRoom)));
  } catch (const TableError& e) {
    throw UsageError(e.what());
  }
  const SaTable& t = *st->table;
  const std::string traffic = args.text("ipsec-traffic", t.outbound() ? "out" : "in");
  if ((traffic == "out" && !t.outbound()) || (traffic == "in" && !t.inbound())) {
    throw UsageError("--ipsec-traffic " + traffic + ": " + t.path() + " has no " +
                     (traffic == "out" ? "outbound" : "inbound") + " SA");
  }
  LoadedApp a;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %zu outbound and %zu inbound SAs, loaded in %.2f s", t.path().c_str(),
                t.outbound(), t.inbound(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  a.table_desc = buf;
  a.app = std::make_unique<IpsecApp>(*st->table);
  const SaTable* table = st->table.get();
  a.generate = [table, traffic](const GenSpec& spec) { return generate_esp_traffic(*table, spec, traffic); };
  a.state = std::move(st);
  return a;
}

AppSpec spec() {
  AppSpec s;
  s.name = "ipsec";
  s.description = "IPsec ESP tunnel gateway (RFC 4303): AES-CBC+HMAC-SHA1, AES-GCM, ChaCha20-Poly1305; OpenSSL on the CPU";
  s.flags = {{"sa", AppFlag::Kind::kFile, "SA file: one SA per line of key=value fields (dir spi src dst cipher key auth authkey selector ...)"},
             {"sa-gen", AppFlag::Kind::kInteger, "generate this many SA pairs (one connection each) instead of --sa", 1, double(kMaxGeneratedSas)},
             {"sa-cipher", AppFlag::Kind::kChoice, "cipher of the generated SAs", 0, 0,
              "aes-128-cbc|aes-128-gcm|aes-256-gcm|chacha20-poly1305", "aes-128-cbc"},
             {"sa-seed", AppFlag::Kind::kInteger, "seed of the generated SAs' keys (test keys: never for real traffic)", 0, 1e18, "", "1"},
             {"sa-room", AppFlag::Kind::kInteger,
              "SAs that `tandem ctl` may add while the run goes (with --control; a deleted SA's slot is reused)", 0,
              double(kMaxSaRoom), "", std::to_string(kDefaultSaRoom)},
             {"ipsec-traffic", AppFlag::Kind::kChoice, "generated traffic: cleartext for the outbound SAs, ESP for the inbound ones, or both",
              0, 0, "out|in|both", "out"}};
  s.bench_flags = "--sa-gen 1024";
  s.load = load;
  s.drop_reasons = [] {
    std::vector<std::pair<DropReason, std::string>> v;
    for (int i = 0; i < kAppDropReasons; ++i) {
      if (const char* n = IpsecApp::reason_name(app_drop_reason(i))) v.emplace_back(app_drop_reason(i), n);
    }
    return v;
  }();
  s.resident_only = true;
  return s;
}

}  // namespace
}  // namespace tandem::ipsec

TANDEM_REGISTER_APP(tandem::ipsec::spec)
