// The host side of a resident ring's finished batch, shared by the resident path's receive threads
// and the scheduler's dispatchers: processing it on the CPU when its device failed, and counting
// and verifying it once it is done.
#pragma once

#include <cstdint>

#include "apps/forward_app.h"
#include "gpu/resident.h"
#include "sched/workers.h"

namespace tandem {

// The batch with the app's frame core, when its device failed. Frames of a batch the device had
// claimed may be half-rewritten: they are dropped as gpu_fault, never sent.
inline void process_slot_on_cpu(const ForwardApp& app, gpu::ResidentRing& ring, uint32_t s, uint32_t n, bool claimed) {
  uint8_t* const bytes = ring.frames(s);
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

// Adds a done batch of n frames (`frames`: what the slot's offsets are from, or its DMA copy) to r: its counters
// from the summary, its bytes, and with `verify` each decision checked against the app's reference.
inline void count_slot(const ForwardApp& app, gpu::ResidentRing& ring, uint32_t s, uint32_t n, const uint8_t* frames,
                       uint64_t rx_bytes, uint64_t wire_bytes, bool verify, WorkersResult& r) {
  const uint32_t* const verdicts = ring.verdicts(s);
  Counters& c = r.counters;
  c.rx_packets += n;
  c.rx_bytes += rx_bytes;
  gpu::summary_to_counters(*ring.summary(s), verdicts, n, ring.summary_ports(), c);
  r.wire_bytes += wire_bytes;
  if (!verify) return;
  const uint32_t* const offsets = ring.offsets(s);
  const uint32_t* const lengths = ring.out_lengths(s);  // lengths(s) unless frames change length
  const uint16_t* const l3 = ring.l3(s);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t want = 0;
    if (!app.reference_verdict(frames + offsets[i], lengths[i], l3[i], verdicts[i], &want)) continue;
    ++r.verify_checked;
    r.verify_mismatches += want != verdicts[i];
  }
}

}  // namespace tandem
