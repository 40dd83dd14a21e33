// Whole frames on the GPU: the in-place, variable-length data block. A batch is frames of any
// length laid back to back in one buffer, each starting on a kFrameAlign boundary with `tail_room`
// spare bytes after it (room for an app that grows a frame, as ESP adds a trailer and an ICV),
// described by an offset and a length per frame. The GPU runs the app's whole per-packet logic
// (apps/frame_core.h) on every frame where it lies in the batch, rewriting it in place, and writes
// a verdict per frame. A batch is bounded by frames and by bytes, whichever fills first.
//
// Two modes: kAsync copies the used part of the batch in and the rewritten frames and verdicts
// back on the slot's stream; kMapped runs the kernel on the host buffer itself (mapped pinned
// memory, no copies: the frames never leave the host). The runner holds its own device copy of the
// app's tables, taken when it was made.
//
// Host-only header: no CUDA types. An app makes its frame core available with
// TANDEM_REGISTER_FRAME_CORE in one of its .cu files (gpu/frame_runner.cuh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"
#include "gpu/offload.h"

namespace tandem::gpu {

inline constexpr uint32_t kFrameAlign = 16;

struct FrameOptions {
  GpuMode mode = GpuMode::kAsync;  // kAsync or kMapped
  size_t max_frames = 8192;        // frames per batch
  size_t max_bytes = size_t{8} << 20;  // bytes per batch: frames, their room and alignment
  int slots = 2;
  uint32_t tail_room = 0;  // spare bytes after each frame
};

// A batch pipeline of `slots()` buffers, as OffloadRunner's: one thread drives it.
class FrameRunner {
 public:
  virtual ~FrameRunner() = default;
  virtual const FrameOptions& options() const = 0;
  // The slot's host buffers: options().max_bytes of frames; per frame (max_frames each) its
  // offset in the bytes and its length, written by the caller, and its verdict (core/batch.h
  // Verdict), written by the GPU.
  virtual uint8_t* bytes(int slot) = 0;
  virtual uint32_t* offsets(int slot) = 0;
  virtual uint32_t* lengths(int slot) = 0;
  virtual const uint32_t* verdicts(int slot) const = 0;
  // Starts the slot's first n frames, which lie in its first `used` bytes. Throws GpuError.
  virtual void submit(int slot, size_t n, size_t used) = 0;
  // Blocks until the slot's batch is done: its frames rewritten, its verdicts written.
  virtual void wait(int slot) = 0;
  // Non-blocking: true once the slot's batch is done.
  virtual bool ready(int slot) = 0;
};

// Fills one slot of a runner frame by frame.
class FramePacker {
 public:
  FramePacker(FrameRunner& runner, int slot) : r_(runner), slot_(slot) {}
  // Copies the frame into the batch; false (nothing copied) when the batch has no room for it.
  bool add(const uint8_t* frame, uint32_t len);
  size_t frames() const { return n_; }
  size_t bytes_used() const { return used_; }
  void submit() { r_.submit(slot_, n_, used_); }
  void wait() { r_.wait(slot_); }
  // Frame k as the GPU left it, and its verdict (after wait()).
  uint8_t* frame(size_t k) { return r_.bytes(slot_) + r_.offsets(slot_)[k]; }
  uint32_t length(size_t k) { return r_.lengths(slot_)[k]; }
  uint32_t verdict(size_t k) const { return r_.verdicts(slot_)[k]; }
  // Empties the batch for the next one.
  void clear() { n_ = used_ = 0; }

 private:
  FrameRunner& r_;
  int slot_;
  size_t n_ = 0;
  size_t used_ = 0;
};

// Where an app's frame core registers its runner (TANDEM_REGISTER_FRAME_CORE, gpu/gpu_factory.h):
// nothing registers in a build without CUDA.
template <class Core>
using FrameRunnerFactory = GpuFactory<std::unique_ptr<FrameRunner>(const Core&, const FrameOptions&)>;

// A runner over a device copy of `core`'s tables. Throws GpuError without a usable GPU.
template <class Core>
std::unique_ptr<FrameRunner> make_frame_runner(const Core& core, const FrameOptions& opts) {
  require_available();
  return FrameRunnerFactory<Core>::create(core, opts);
}

}  // namespace tandem::gpu
