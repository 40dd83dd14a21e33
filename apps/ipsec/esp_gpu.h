// ESP on the GPU, one thread per frame, over esp_frame.h and esp_hd.h (the code the CPU's OpenSSL
// path is checked against): a batch of cleartext frames, each with its SA and sequence number
// chosen by the host (both are per-SA state the host owns), encapsulated and sealed in place.
// Batches are whole frames back to back (offsets, lengths), each with kMaxEspGrowth bytes of room
// behind it. Host-only header: builds without CUDA have no implementation, and create() throws the
// no-GPU gpu::GpuError (gpu/gpu_factory.h).
//
// Not constant-time: table-based AES and GHASH (apps/crypto/aes_core.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "apps/ipsec/sa_table.h"
#include "gpu/gpu_factory.h"
#include "gpu/gpu_runtime.h"

namespace tandem::ipsec {

class EspGpu {
 public:
  using Factory = gpu::GpuFactory<std::unique_ptr<EspGpu>(const SaTable&, size_t, size_t)>;
  // A runner over a device copy of the table's keys, for batches of up to max_frames frames in
  // max_bytes. Throws gpu::GpuError without a usable GPU.
  static std::unique_ptr<EspGpu> create(const SaTable& t, size_t max_frames, size_t max_bytes) {
    gpu::require_available();
    return Factory::create(t, max_frames, max_bytes);
  }
  virtual ~EspGpu() = default;

  // The batch's pinned host arrays, in: cleartext frames and per frame its offset, length, outbound
  // SA and sequence number; out (a buffer of its own, so the input stays as it was): the ESP
  // frames at the same offsets, their lengths and verdicts.
  virtual uint8_t* bytes() = 0;
  virtual uint32_t* offsets() = 0;
  virtual uint32_t* lengths() = 0;
  virtual uint32_t* sas() = 0;
  virtual uint64_t* seqs() = 0;
  virtual const uint8_t* out_bytes() const = 0;
  virtual const uint32_t* out_lengths() const = 0;
  virtual const uint32_t* verdicts() const = 0;

  // Host to host: copies the first n frames (in `used` bytes) in, seals them, copies them out.
  virtual void seal(size_t n, size_t used) = 0;
  // Device only: copies the batch in once, then times `reps` sealing kernels over it (each on a
  // fresh copy of the cleartext, made on the device outside the timing). Seconds per kernel.
  virtual double time_seal_kernel(size_t n, size_t used, int reps) = 0;
};

}  // namespace tandem::ipsec
