// DPDK as a comparator inside `tandem bench ...`: one EAL per process, started without hugepages,
// PCI, shared config or telemetry (nothing to set up on the machine), with the EAL heap advised for
// transparent hugepages so that DPDK's tables get the same TLB treatment as Tandem's (HugeRegion):
// a comparison of lookup structures, not of page sizes. Only built where DPDK was found
// (TANDEM_HAVE_DPDK; scripts/fetch-dpdk.sh).
#pragma once

#include <cstddef>
#include <string>

namespace tandem::bench {

struct DpdkEnv {
  std::string version;     // rte_version()
  size_t heap_mib = 0;     // -m
  size_t heap_advised = 0; // bytes of EAL memory advised MADV_HUGEPAGE
};

// Starts the EAL once (later calls return the first result). heap_mib is the EAL heap (-m); every
// DPDK table of the run must fit in it. The calling thread's CPU affinity is restored afterwards
// (the EAL pins its main thread). Throws std::runtime_error if the EAL does not start.
const DpdkEnv& dpdk_start(size_t heap_mib);

}  // namespace tandem::bench
