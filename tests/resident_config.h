// The resident path's test configuration, shared by tests/resident_test.cc and
// tests/resident_live_test.cc: few slots (each reused many times), 2 KiB cells, every decision
// verified.
#pragma once

#include "apps/forward_app.h"
#include "gpu/resident.h"
#include "sched/resident.h"

namespace tandem {

// cpu: the receive threads process their batches (no GPU).
inline ResidentConfig resident_test_config(const ForwardApp& app, int producers, gpu::FrameLayout layout,
                                           uint32_t batch, bool cpu) {
  ResidentConfig rc;
  rc.producers = producers;
  rc.cpu = cpu;
  rc.ring.layout = layout;
  rc.ring.batch = batch;
  rc.ring.slots_per_producer = 4;
  rc.ring.cell_size = 2048;
  rc.verify = true;
  rc.ports = app.ports();
  return rc;
}

}  // namespace tandem
