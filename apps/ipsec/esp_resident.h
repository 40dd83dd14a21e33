// The ipsec app on the resident GPU path (gpu/resident.h): the GPU runs the whole gateway on the
// frames in the ring, parse, SA selection, sequence numbers, encapsulation, crypto, anti-replay
// windows and decapsulation, as IpsecApp::process does frame by frame, with no per-packet CPU work.
//
// The per-SA state (outbound sequence counters, inbound replay windows) moves to the GPU for the
// run. Each batch takes it in the order the batches were dispatched, in two short ordered steps
// of one warp: numbering the outbound frames before their crypto, and checking and updating the
// windows after it, in frame order. Everything else (parse, crypto, framing) is parallel. So the
// decisions are those of IpsecApp::process_burst over the batches in dispatch order: identical
// ESP bytes to the CPU path's for one receive thread. With ESN, the high half of an inbound
// number is inferred from the window as the ordered step last left it, not from the frames just
// before it in the same or the previous batch (as process_burst).
//
// Every change of that state is also written through to a copy in host memory (mapped), in
// order before the batch's done word. The host's SaTable takes the state back when the run ends,
// or when the GPU fails, before the receive threads finish the rest on the CPU; a batch claimed
// before the GPU failed (its changes possibly half in host memory) is dropped as gpu_fault, so no
// sequence number that reached the wire is used twice and no accepted number is accepted again.
// Live SA updates (SaControl) reach the run's copy: an added SA is written into its slot's place
// on the GPU with fresh state, then a new index naming it is published, which each batch reads
// as it starts; the control waits until no batch reads the index before, and only then may a
// removed SA's slot be wiped and reused (esp_resident.cu).
// Persistent mode only. Host-only header.
#pragma once

#include <memory>

#include "apps/ipsec/sa_table.h"
#include "gpu/gpu_factory.h"
#include "gpu/resident.h"

namespace tandem::ipsec {

class SaControl;

using EspResidentFactory = gpu::GpuFactory<std::unique_ptr<gpu::ResidentRunner>(
                                               SaTable&, gpu::ResidentRing&, const gpu::ResidentOptions&, SaControl*),
                                           struct EspResidentTag>;

// Throws gpu::GpuError without a usable GPU, or for the DMA mode. `control` (null: none): the
// live updates the runner's copy of the SAs takes while it runs (sa_control.h); it is connected
// from the runner's construction to its destruction.
inline std::unique_ptr<gpu::ResidentRunner> make_esp_resident_runner(SaTable& t, gpu::ResidentRing& ring,
                                                                     const gpu::ResidentOptions& o,
                                                                     SaControl* control = nullptr) {
  gpu::require_available();
  return EspResidentFactory::create(t, ring, o, control);
}

}  // namespace tandem::ipsec
