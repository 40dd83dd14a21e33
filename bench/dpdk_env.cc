#include "bench/dpdk_env.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_memory.h>
#include <rte_version.h>
#include <sched.h>
#include <sys/mman.h>

#include <memory>
#include <stdexcept>
#include <vector>

namespace tandem::bench {

namespace {

int advise_hugepages(const rte_memseg_list* msl, void* arg) {
  if (msl->base_va != nullptr && msl->len > 0 && madvise(msl->base_va, msl->len, MADV_HUGEPAGE) == 0) {
    *static_cast<size_t*>(arg) += msl->len;
  }
  return 0;
}

}  // namespace

const DpdkEnv& dpdk_start(size_t heap_mib) {
  static std::unique_ptr<DpdkEnv> env;
  if (env) return *env;
  cpu_set_t saved;
  const bool have_saved = sched_getaffinity(0, sizeof(saved), &saved) == 0;
  int first_cpu = 0;
  while (have_saved && first_cpu < CPU_SETSIZE && !CPU_ISSET(first_cpu, &saved)) ++first_cpu;
  // Static: the EAL may keep pointers into its arguments after rte_eal_init returns.
  static std::vector<std::string> args = {"tandem-bench", "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
                                   "-m", std::to_string(heap_mib), "-l", std::to_string(first_cpu),
                                   "--log-level", "error", "--force-max-simd-bitwidth", "512"};
  static std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) {
    throw std::runtime_error(std::string("DPDK EAL did not start: ") + rte_strerror(rte_errno));
  }
  if (have_saved) sched_setaffinity(0, sizeof(saved), &saved);
  env = std::make_unique<DpdkEnv>();
  env->version = rte_version();
  env->heap_mib = heap_mib;
  // With --no-huge the heap is anonymous memory that tables touch only when they are created
  // (rte_zmalloc zeroes them), so advising it now gets them transparent hugepages.
  rte_memseg_list_walk(advise_hugepages, &env->heap_advised);
  return *env;
}

}  // namespace tandem::bench
