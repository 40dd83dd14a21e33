// The echo app: port = X mod 4, the G-Opt paper's limit app (echo_app.h). No table.
#include "apps/echo/echo_app.h"
#include "apps/registry.h"
#include "core/byte_order.h"
#include "io/flow_traffic.h"

namespace tandem::echo {
namespace {

LoadedApp load(const AppArgs&) {
  LoadedApp a;
  a.table_desc = "no table: port = X mod 4";
  a.app = std::make_unique<EchoApp>();
  a.generate = [](const GenSpec& spec) {
    return generate_flows(spec, 4, [](Rng& rng, GenFlow& f) {
      store_be32(f.dst, uniform_unicast_ipv4(rng));
      f.payload.resize(4);
      store_be32(f.payload.data(), static_cast<uint32_t>(rng.next()));
    });
  };
  return a;
}

AppSpec spec() {
  AppSpec s;
  s.name = "echo";
  s.drop_reasons = app_drop_reasons<EchoTraits>();
  s.description = "port = the first 32-bit payload word mod 4: the cost of the path itself, no table";
  s.load = load;
  s.test_cases = [](const auto&) { return std::vector<AppTestCase>{{"echo", {}, "count=30000,flows=0,proto=tcp,seed=8"}}; };
  return s;
}

}  // namespace
}  // namespace tandem::echo

TANDEM_REGISTER_APP(tandem::echo::spec)
