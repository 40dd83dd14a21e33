#include "bench/dpdk_env.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_version.h>
#include <sched.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "bench/bench_report.h"
#include "core/huge_memory.h"

namespace tandem::bench {

namespace {

[[noreturn]] void dpdk_fail(const std::string& what) {
  throw std::runtime_error("DPDK: " + what + ": " + rte_strerror(rte_errno));
}

}  // namespace

const DpdkEnv& dpdk_start(size_t heap_mib) {
  static std::unique_ptr<DpdkEnv> env;
  static std::unique_ptr<HugeRegion> heap_memory;  // lives as long as the process: DPDK keeps using it
  if (env) return *env;
  cpu_set_t saved;
  const bool have_saved = sched_getaffinity(0, sizeof(saved), &saved) == 0;
  int first_cpu = 0;
  while (have_saved && first_cpu < CPU_SETSIZE && !CPU_ISSET(first_cpu, &saved)) ++first_cpu;
  // Static: the EAL may keep pointers into its arguments after rte_eal_init returns. The EAL's own
  // heap only holds DPDK's bookkeeping; the tables go to the external heap below.
  static std::vector<std::string> args = {"tandem-bench", "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
                                          "-m", "128", "-l", std::to_string(first_cpu), "--log-level", "error",
                                          "--force-max-simd-bitwidth", "512"};
  static std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) dpdk_fail("the EAL did not start");
  if (have_saved) sched_setaffinity(0, sizeof(saved), &saved);

  constexpr size_t kPage = size_t{2} << 20;
  const size_t bytes = (heap_mib << 20) / kPage * kPage;
  heap_memory = std::make_unique<HugeRegion>(bytes);  // zeroed and faulted in, hugepages advised
  if (rte_malloc_heap_create("tandem") != 0) dpdk_fail("rte_malloc_heap_create");
  if (rte_malloc_heap_memory_add("tandem", heap_memory->data(), bytes, nullptr, static_cast<unsigned>(bytes / kPage),
                                 kPage) != 0) {
    dpdk_fail("rte_malloc_heap_memory_add");
  }
  env = std::make_unique<DpdkEnv>();
  env->version = rte_version();
  env->socket = rte_malloc_heap_get_socket("tandem");
  if (env->socket < 0) dpdk_fail("rte_malloc_heap_get_socket");
  env->heap_mib = bytes >> 20;
  env->heap_hugepage_bytes = hugepage_bytes_in(heap_memory->data(), bytes);
  return *env;
}

}  // namespace tandem::bench
