// Where a GPU's ring and kernel go, shared by the resident path (sched/resident.h) and the
// scheduler (sched/hetero.h): rings that share one GPU split its multiprocessors, and on a host
// with several NUMA nodes a GPU's ring is kept on the GPU's node (PacketShader's rule).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/numa.h"
#include "gpu/gpu_runtime.h"
#include "gpu/resident.h"

namespace tandem {

// Worker blocks for one of `sharing` rings on `gpu`: the options' own when set or when the GPU is
// not shared, else an equal part of its multiprocessors, so that every persistent kernel stays resident.
inline int shared_gpu_blocks(int gpu, int sharing, int blocks) {
  if (sharing < 2 || blocks != 0) return blocks;
  return std::max(1, gpu::device_info(gpu).sm_count / sharing - 1);
}

// Keeps `ring` on `gpu`'s NUMA node where the host has several; returns the node (-1: not placed).
// A refusal is said on stderr (naming `who`) and leaves the memory where it is: correct, only slower.
inline int place_ring_near_gpu(gpu::ResidentRing& ring, int gpu, const std::string& who) {
  const int node = numa_node_count() > 1 ? gpu::numa_node(gpu) : -1;
  std::string why;
  if (node >= 0 && !prefer_node(ring.region(), ring.region_bytes(), node, &why)) {
    std::fprintf(stderr, "%s's ring stays where it is (%s)\n", who.c_str(), why.c_str());
  }
  return node;
}

}  // namespace tandem
