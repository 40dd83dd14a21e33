// Where the hashing app's warm-up and traffic come from: a generated pool of random payloads, or
// the payloads of a capture; generated flows that repeat the pool's payloads with a given share.
#pragma once

#include <cstdint>
#include <string>

#include "apps/hashing/hashing_app.h"
#include "io/packet_store.h"
#include "io/traffic_gen.h"

namespace tandem::hashing {

// The longest generated payload: UDP's in a 1500-byte IPv4 MTU.
inline constexpr uint32_t kMaxGenPayload = 1472;

// Warms the table up with `n` random payloads of `payload_bytes` each (0: each of 1..kMaxGenPayload
// bytes, uniformly), the same for a seed.
void warm_up_generated(HashingSetup& setup, uint64_t n, uint32_t payload_bytes, uint64_t seed);

// Warms the table up with the transport payloads of a capture's frames (those the app does not
// drop and that carry a payload), in capture order; returns how many. Throws IoError naming the
// file.
uint64_t warm_up_from_capture(HashingSetup& setup, const std::string& path);

// IPv4 flows (count, flows, seed and proto from the spec) whose payload is one of the warm-up's
// (those of at most kMaxGenPayload bytes), drawn uniformly, with probability `redundancy`, else
// random bytes sized as warm_up_generated's. Every packet of a flow carries its flow's payload, and
// a frame is as long as its payload needs (the spec's size is its minimum), as an NDN Interest is
// as long as its name.
PacketStore generate_hashing_traffic(const HashingSetup& setup, const GenSpec& spec, double redundancy,
                                     uint32_t payload_bytes);

}  // namespace tandem::hashing
