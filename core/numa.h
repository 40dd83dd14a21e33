// NUMA placement for devices on several sockets (PacketShader's rule: a GPU's buffers and the
// threads that feed it live on the node its PCIe slot hangs off). Read from sysfs; no libnuma.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tandem {

// Nodes with CPUs, from /sys/devices/system/node/has_cpu (1 where the kernel has no NUMA support).
int numa_node_count();

// The CPUs of `node`, from its cpulist (empty when the node does not exist).
std::vector<int> numa_node_cpus(int node);

// Lets the calling thread run on any CPU of `node` it may use now (sched_setaffinity, within its
// current affinity). False when none is left or the kernel refuses; the thread then runs where it did.
bool run_on_node(int node);

// Asks the kernel to keep the pages of [p, p + bytes) on `node`, moving those already touched
// (mbind, MPOL_PREFERRED, MPOL_MF_MOVE). False, with the reason in *why, when it refuses (no NUMA
// support, no such node); the memory then stays where it is, which is correct, only slower.
bool prefer_node(void* p, size_t bytes, int node, std::string* why);

}  // namespace tandem
