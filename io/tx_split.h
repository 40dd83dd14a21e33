// How the live transmit ends (io/af_packet.h, io/af_xdp.h, io/dpdk_port.h) spread a burst over
// their output interfaces: port p of the app leaves through interface p % n, in the burst's order;
// a flooded frame (Verdict::kFloodPort) leaves through every interface, and only its copy on the
// first one is counted (a refusal there makes it dropped once; the other copies are extra).
#pragma once

#include <cstdint>

#include "core/batch.h"
#include "core/counters.h"

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

// A transmit end's tx_burst over its interfaces: send(interface, idx, n, counters) sends the
// frames and returns how many left; the flooded copies beyond the first are counted nowhere.
// Returns the frames sent that count (each forwarded frame once).
template <class Send>
uint64_t send_split(const PacketBatch& batch, uint32_t interfaces, Counters& c, Send&& send) {
  uint64_t sent = 0;
  split_by_interface(batch, interfaces, [&](uint32_t p, const uint32_t* idx, uint32_t n, bool counted) {
    Counters scratch(0);  // copies of a flooded frame: counted by its first copy
    const uint32_t s = send(p, idx, n, counted ? c : scratch);
    if (counted) sent += s;
  });
  return sent;
}

}  // namespace tandem
