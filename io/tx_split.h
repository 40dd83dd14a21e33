// How the live transmit ends (io/af_packet.h, io/af_xdp.h, io/dpdk_port.h) spread a burst over
// their output interfaces: port p of the app leaves through interface p % n, in the burst's order;
// a flooded frame (Verdict::kFloodPort) leaves through every interface, and only its copy on the
// first one is counted (a refusal there makes it dropped once; the other copies are extra).
#pragma once

#include <cstdint>

#include "core/batch.h"

namespace tandem {

// Calls send(interface, idx, n, counted) for each interface that has frames: the indices (into
// `batch`) of the frames it sends, then, with counted = false, the flooded copies it sends too.
template <class Send>
void split_by_interface(const PacketBatch& batch, uint32_t interfaces, Send&& send) {
  uint32_t own[PacketBatch::kCapacity], copies[PacketBatch::kCapacity];
  for (uint32_t p = 0; p < interfaces; ++p) {
    uint32_t n = 0, f = 0;
    for (uint32_t i = 0; i < batch.size; ++i) {
      const uint32_t v = batch.verdict[i];
      if (Verdict::is_drop(v)) continue;
      const uint32_t port = Verdict::port(v);
      if (port == Verdict::kFloodPort) {
        if (p == 0) {
          own[n++] = i;
        } else {
          copies[f++] = i;
        }
      } else if (interfaces == 1 || port % interfaces == p) {
        own[n++] = i;
      }
    }
    if (n) send(p, own, n, true);
    if (f) send(p, copies, f, false);
  }
}

}  // namespace tandem
