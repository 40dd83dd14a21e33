// IPv4 forwarding over a batch with the stages written out for the benchmarks: `tandem bench
// gpu-router` runs classify and apply around its own GPU submission, and compares the GPU's
// whole-frame runner with forward_scalar. The product path is the ipv4 app (apps/ipv4/ipv4_app.h).
//
//   classify: parse and validate each packet (core/parse.h), drop martians (RFC 1812 5.3.7) and
//             packets whose TTL would expire, and write the destination of each survivor into a
//             dense array;
//   lookup:   any of the lookup paths over that array (CPU scalar, CPU batched, GPU);
//   apply:    drop packets with no route; otherwise decrement the TTL, patch the header checksum
//             incrementally (RFC 1624) and set the verdict to the next hop's port.
//
// The per-packet decisions are ipv4_frame_core.h's, shared with the app and the GPU; this adds
// the counters.
#pragma once

#include <cstdint>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/ipv4_frame_core.h"
#include "core/batch.h"
#include "core/counters.h"
#include "core/packet_pool.h"

namespace tandem::ipv4 {

// The destinations of a batch's packets that go on to the lookup, dense, and where each packet is.
struct DestinationBatch {
  uint32_t count = 0;
  uint32_t dst[PacketBatch::kCapacity];       // destination address, host order
  uint16_t position[PacketBatch::kCapacity];  // index of the packet in its batch
};

// Parses and validates the batch. Packets to drop get their verdict and are counted in `c`;
// the rest get a destination. Counts every packet as received. With `prefetch` set, each
// destination's tbl24 entry is prefetched as soon as it is known, so the misses overlap with
// parsing the rest of the batch (forward_batched); the GPU path passes nullptr.
void classify(PacketPool& pool, PacketBatch& batch, DestinationBatch& dsts, Counters& c,
              const Dir24_8* prefetch = nullptr);

// Applies next_hops[k] (the lookup result of dsts.dst[k]) to the packet it came from.
void apply(PacketPool& pool, PacketBatch& batch, const DestinationBatch& dsts, const uint32_t* next_hops,
           Counters& c);

// One batch, one packet at a time through every stage: the plain CPU baseline.
void forward_scalar(const Dir24_8& table, PacketPool& pool, PacketBatch& batch, Counters& c);

// One batch through classify (prefetching each destination's tbl24 entry), the lookup and apply.
void forward_batched(const Dir24_8& table, PacketPool& pool, PacketBatch& batch, Counters& c);

// One frame through classify, lookup and apply (ipv4_frame_core.h, the code the GPU's whole-frame
// runner runs): rewrites `frame` in place when it is forwarded and returns its Verdict encoding.
// Counts nothing.
uint32_t forward_frame_cpu(const Dir24_8& table, uint8_t* frame, uint32_t len);

}  // namespace tandem::ipv4
