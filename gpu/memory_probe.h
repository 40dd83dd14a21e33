// Random-access rate of GPU memory, for `tandem bench memory` (host-only interface; builds without
// CUDA link memory_probe_none.cc, which throws GpuError).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::gpu {

// Random 8-byte reads over a device array of `bytes` (64-byte cells, one read from a random cell
// each), `accesses` per repetition, from a grid-stride kernel whose threads generate independent
// random cell indexes (splitmix64 of the access counter). Timed with CUDA events; returns the
// median of `reps` repetitions in accesses per second, with the median milliseconds in *ms_out.
// Throws GpuError when there is no GPU or a CUDA call fails (e.g. not enough device memory).
double gpu_random_read_rate(size_t bytes, uint64_t accesses, int reps, double* ms_out = nullptr);

}  // namespace tandem::gpu
