// The ceilings of a GPU data path on this host, measured with kernels that do no app work: 64-byte
// frames in pinned host memory, each read by the GPU, 8 bytes of it rewritten and a 4-byte verdict
// written (what a router's whole-frame path moves at the least). `tandem bench gpu-path` puts them
// beside the app's rows of the same run. Host-only header; without CUDA, measure() throws GpuError.
#pragma once

#include <string>
#include <vector>

namespace tandem::bench {

struct Ceiling {
  std::string name;  // what is measured
  double mpps = 0;   // median over the repetitions
};

// In place from 2 KiB cells and from 64 B-strided frames (mapped memory, a grid over the frames;
// a thread per frame, and four lanes per frame reading 16 bytes each), and by DMA of back-to-back frames in batches of 65,536 with verdicts only, or frames
// and verdicts, copied back (4 streams). Each repetition lasts at least min_seconds.
// With gpus > 1, every probe runs on GPUs 0..gpus-1 at once (a thread each) and the figure is their
// sum: against gpus x the one-GPU figure, it shows what the GPUs share (the host's PCIe root or
// memory). A final probe reads whole 1,504-byte frames from cells: PCIe read bandwidth.
std::vector<Ceiling> measure_gpu_path_ceilings(int reps, double min_seconds, int gpus = 1);

}  // namespace tandem::bench
