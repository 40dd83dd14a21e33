// DPDK as a comparator inside `tandem bench ...`: one EAL per process, started without hugepages,
// PCI, shared config or telemetry (nothing to set up on the machine). DPDK's tables are then
// created on an external malloc heap (rte_malloc_heap_memory_add) carved from the same kind of
// memory as Tandem's tables (core/huge_memory.h: anonymous, transparent hugepages advised,
// pre-faulted), so that both sides get the same TLB treatment: a comparison of lookup structures,
// not of page sizes. (With --no-huge alone, the EAL heap is shared memory, which the kernel backs
// with 4 KiB pages unless shmem hugepages are enabled.) Only built where DPDK was found
// (TANDEM_HAVE_DPDK; scripts/fetch-dpdk.sh).
#pragma once

#include <cstddef>
#include <string>

namespace tandem::bench {

struct DpdkEnv {
  std::string version;       // rte_version()
  int socket = -1;           // the socket id of the external heap: pass it to rte_*_create
  size_t heap_mib = 0;       // size of the external heap
  long long heap_hugepage_bytes = -1;  // of it, backed by transparent hugepages (from smaps)
};

// Starts the EAL once (later calls return the first result) and adds an external heap of
// heap_mib MiB; every DPDK table of the run must fit in it. The calling thread's CPU affinity is
// restored afterwards (the EAL pins its main thread). Throws std::runtime_error on failure.
const DpdkEnv& dpdk_start(size_t heap_mib);

}  // namespace tandem::bench
