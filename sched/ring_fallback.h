// A resident ring's batch processed on the CPU by the thread that published it, with the app's frame
// core: what the resident path and the scheduler's dispatchers do when a device fails. Frames of a
// batch the device had claimed may be half-rewritten: they are dropped as gpu_fault, never sent.
#pragma once

#include <cstdint>

#include "apps/forward_app.h"
#include "gpu/resident.h"

namespace tandem {

inline void process_slot_on_cpu(const ForwardApp& app, gpu::ResidentRing& ring, uint32_t s, uint32_t n, bool claimed) {
  uint8_t* const bytes = ring.bytes(s);
  const uint32_t* const offsets = ring.offsets(s);
  const uint32_t* const lengths = ring.lengths(s);
  uint32_t* const out_lengths = ring.out_lengths(s);
  uint32_t* const verdicts = ring.verdicts(s);
  uint16_t* const l3 = ring.l3(s);
  gpu::BatchSummary& sum = *ring.summary(s);
  gpu::summary_clear(sum);
  const uint32_t cap = ring.max_frame();
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t len = lengths[i];
    if (claimed) {
      verdicts[i] = Verdict::drop(DropReason::kGpuFault);
      l3[i] = 0;
    } else {
      verdicts[i] = app.forward_frame_resizable(bytes + offsets[i], &len, cap, &l3[i]);
    }
    if (ring.lengths_change()) out_lengths[i] = len;
    gpu::summary_add(sum, verdicts[i], len, ring.summary_ports());
  }
}

}  // namespace tandem
