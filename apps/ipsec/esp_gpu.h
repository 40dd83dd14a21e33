// ESP on the GPU, one thread per frame, over esp_frame.h and esp_hd.h (the code the CPU's OpenSSL
// path is checked against, frame for frame). Each frame comes with its SA and full sequence number
// chosen by the host, which owns that per-SA state (outbound counters, inbound replay windows):
//   seal: a cleartext frame is encapsulated for its outbound SA and sealed;
//   open: an ESP frame's ICV is verified under its inbound SA, and the payload decrypted,
//         checked (padding, next header, inner length) and decapsulated.
// The host still does the replay window's update and the inbound SA's selector check on the
// verdicts that come back.
//
// A runner has `slots` batches, each with its own stream and buffers, so that copies and kernels
// of several batches overlap (PCIe is full duplex). A batch is whole frames back to back (offset,
// length), each with kMaxEspGrowth bytes of room behind it; results go to an output buffer of the
// slot's own, so the input stays as it was. Host-only header: builds without CUDA have no
// implementation, and create() throws the no-GPU gpu::GpuError (gpu/gpu_factory.h).
//
// Not constant-time: table-based AES and GHASH (apps/crypto/aes_core.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/ipsec/sa_table.h"
#include "io/packet_store.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"

namespace tandem::ipsec {

class EspGpu {
 public:
  enum class Op : uint8_t { kSeal, kOpen };
  using Factory = gpu::GpuFactory<std::unique_ptr<EspGpu>(const SaTable&, size_t, size_t, int)>;
  // A runner over a device copy of the table's keys, with `slots` batches of up to max_frames
  // frames in max_bytes each. Throws gpu::GpuError without a usable GPU.
  static std::unique_ptr<EspGpu> create(const SaTable& t, size_t max_frames, size_t max_bytes, int slots = 1) {
    gpu::require_available();
    return Factory::create(t, max_frames, max_bytes, slots);
  }
  virtual ~EspGpu() = default;
  virtual int slots() const = 0;

  // A slot's pinned host arrays. In: frames, and per frame its offset, length, SA and full
  // sequence number. Out: the frames at the same offsets, their lengths and verdicts.
  virtual uint8_t* bytes(int slot) = 0;
  virtual uint32_t* offsets(int slot) = 0;
  virtual uint32_t* lengths(int slot) = 0;
  virtual uint32_t* sas(int slot) = 0;
  virtual uint64_t* seqs(int slot) = 0;
  virtual const uint8_t* out_bytes(int slot) const = 0;
  virtual const uint32_t* out_lengths(int slot) const = 0;
  virtual const uint32_t* verdicts(int slot) const = 0;

  // Starts the slot's first n frames (in `used` bytes): copies in, the kernel, copies out.
  virtual void submit(int slot, Op op, size_t n, size_t used) = 0;
  // Blocks until the slot's batch is back.
  virtual void wait(int slot) = 0;
  void run(int slot, Op op, size_t n, size_t used) {
    submit(slot, op, n, used);
    wait(slot);
  }
  // Device only: copies the slot's batch in once, then times `reps` kernels over it (each on a
  // fresh device copy of the input, made outside the timing). Seconds per kernel.
  virtual double time_kernel(int slot, Op op, size_t n, size_t used, int reps) = 0;
};

// What pack_esp_frames put into a slot.
struct EspPacked {
  size_t frames = 0;  // in the slot
  size_t bytes = 0;   // of the slot's buffer used
  size_t next = 0;    // the first frame of the input not taken (the slot filled up before it)
};

// Fills `slot` (max_frames frames, max_bytes bytes) with the input's frames from `first` on, as the
// CPU path would take them: seal, the SA that selects each frame and its next sequence number
// (taken from the SA); open, the SA of its SPI and the inferred full number. Frames no SA takes
// (bypassed, unknown SPI, not parsed) are left out, their indices appended to *skipped.
EspPacked pack_esp_frames(EspGpu& g, int slot, SaTable& t, EspGpu::Op op, const PacketStore& s, size_t first,
                          size_t max_frames, size_t max_bytes, std::vector<size_t>* skipped);

}  // namespace tandem::ipsec
