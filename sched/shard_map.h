// How the adaptive scheduler splits traffic between its devices: every packet's flow hash picks one
// of kShards shards (like a NIC's RSS redirection table), and every shard belongs to one device. A
// flow therefore stays on one device (its packets stay in order), and a new split is reached by
// moving whole shards, as few as possible, so that few flows change device at once.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::sched {

inline constexpr uint32_t kShards = 1024;

// The shard of a 32-bit flow hash. The hash is offset by a salt and multiplied by a 64-bit odd
// constant (Fibonacci hashing); the top 10 bits of the product are the shard. Why:
//  - RSS already used the hash: queue = hash % queues. Shards taken from the hash's low bits would
//    put every shard in one queue; the product's top bits depend on all of the hash's bits, so
//    each queue's packets spread over all shards and each shard draws from all queues.
//  - Consecutive hashes (synthetic traffic, counters) become a Weyl sequence, which fills the shards
//    evenly rather than merely at random.
// Inline: it runs once per packet.
inline uint32_t shard_of(uint32_t flow_hash) {
  constexpr uint64_t kSalt = 0x5bd1e9955bd1e995ull;  // any fixed value: decorrelates from other users
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;   // 2^64 / golden ratio, odd
  static_assert(kShards == 1024, "the shift below takes 10 bits");
  return uint32_t(((uint64_t(flow_hash) + kSalt) * kMul) >> 54);
}

// Reassigns shards to devices for target shares (any number of shards; kShards in the scheduler).
//  cur[s]    the device of shard s now (an index into share; one out of range counts as a removed
//            device's).
//  weight[s] its recent packets (an EWMA); all zero: treated as uniform. Negative or non-finite:
//            std::invalid_argument.
//  share[d]  the target fraction of the weight for device d; normalised to sum 1 (std::invalid_argument
//            if none is positive or one is negative or non-finite; at most 256 devices).
// Returns the new assignment. Deterministic (ties go to the lower index). In order:
//  1. Every shard of a device with share 0 (or out of range) moves, heaviest first, to the device
//     furthest below its target: a failed or removed device empties at once, whatever max_moved.
//     Weightless ones go where the fewest shards are for the share, so later traffic on them spreads.
//  2. While a device's weight fraction is more than `tolerance` from its share, weight moves from
//     the device furthest above its target to the one furthest below: the heaviest shard that
//     fits (moving it takes neither past its target). Aiming at the target, not at the tolerance's
//     edge, leaves headroom so that the next call's noise does not move shards back; stopping as
//     soon as the tolerance holds keeps the moved weight near the least possible. When no shard
//     fits (shards coarser than the gap), a coarse shard moves and lighter shards of the receiver
//     come back to refill the donor, if that narrows the pair's total gap (a device too small for
//     its heavy shard trades it for light ones); when nothing narrows it, the shards stay: a
//     single shard heavier than the tolerance does not ping-pong. Every step strictly lowers the
//     total gap, so this ends. Greedy, not an optimal packing: with shards coarser than the
//     tolerance it can stop short of the best split.
//  3. The weight moved in 1 and 2 together (net: weight of shards whose device changed) stays
//     within max_moved (a fraction of the total) except for what step 1 must move.
std::vector<uint8_t> assign_shards(const std::vector<uint8_t>& cur, const std::vector<double>& weight,
                                   const std::vector<double>& share, double tolerance = 0.01,
                                   double max_moved = 1.0);

// Initial assignment of kShards shards for shares (normalised as above): each device with a positive
// share gets a contiguous run, sized in proportion by largest remainder; weights are not known yet.
std::vector<uint8_t> initial_shards(const std::vector<double>& share);

}  // namespace tandem::sched
