// Receive-side scaling over an in-memory capture: which worker queue each frame goes to, by the
// flow hash of its 5-tuple (core/flow_hash.h), as a NIC's RSS would. All frames of a flow land in
// one queue, so a flow is never reordered by being split across workers. Frames that do not parse
// as IP go to queue 0 (NICs do the same with frames their hash does not cover).
#pragma once

#include <cstdint>
#include <vector>

#include "io/packet_store.h"

namespace tandem {

// Frame indexes of `store` per queue, each in capture order.
std::vector<std::vector<uint32_t>> rss_split(const PacketStore& store, int queues);

}  // namespace tandem
