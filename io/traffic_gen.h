// Synthetic IPv4 traffic for benchmarks and tests: Ethernet + IPv4 + UDP or TCP frames with valid
// checksums, generated into a PacketStore that a ReplaySource then serves at peak rate.
//
// Frames: Ethernet dst 02:00:00:00:00:01, src 02:00:00:00:00:02, type IPv4; IPv4 with IHL 5,
// TTL 64, DF, id = packet index & 0xffff; UDP (length and checksum set) or TCP (20-byte header,
// ACK, checksum set); the rest is a byte pattern. `size=N` is the Ethernet frame size including
// the 4-byte FCS, as in RFC 2544, so a stored frame has N - 4 bytes (60 for size=64) and
// wire_len = caplen. IMIX is the simple IMIX: 64, 594 and 1518-byte frames 7:4:1, shuffled in
// blocks of 12 so every 12 packets hold exactly that mix. Timestamps start at 1700000000 s and
// follow each other as on a saturated 100 Gb/s link: a frame takes (N + 20) * 8 bits (preamble
// and inter-frame gap included) at 0.01 ns per bit; the running total is rounded to whole ns.
//
// Destinations: dst=uniform draws uniformly from the unicast IPv4 space 1.0.0.0-223.255.255.255
// minus 127.0.0.0/8 (so never 0/8, loopback, multicast or class E). dst=fib picks a prefix of the
// FIB uniformly, then a uniform address inside it (a /32 gives the address itself). Sources are
// random in 10.0.0.0/8, ports random in 1024..65535.
//
// Flows: flows=0 makes every packet a fresh random 5-tuple. flows=F > 0 (F <= count) draws F
// 5-tuples up front; each packet then picks one uniformly (zipf=0) or by a Zipf law with exponent s = zipf
// over the flow ranks: rank k (the k-th flow drawn) has probability k^-s / sum_{j=1..F} j^-s.
//
// Everything derives from `seed` through xoshiro256** and integer arithmetic (no <random>
// distributions, whose output differs between standard libraries), so a spec gives the same
// bytes everywhere; only Zipf weights use std::pow, whose last bit may vary between C libraries.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "io/packet_store.h"

namespace tandem {

struct GenSpec {
  uint64_t count = 1000000;
  enum class Dst { kUniform, kFib } dst = Dst::kUniform;
  uint32_t flows = 0;
  double zipf = 0.0;
  enum class Size { kFixed, kImix } size_mode = Size::kFixed;
  uint32_t frame_size = 64;  // with FCS; used when size_mode == kFixed
  uint8_t proto = 17;        // 17 (UDP) or 6 (TCP)
  uint64_t seed = 1;
};

// Flows are drawn up front and held in memory: at most this many, and never more than `count`
// (no more than `count` of them can appear).
inline constexpr uint32_t kMaxGenFlows = 1u << 24;

// Parses "key=value,key=value,..." (e.g. "count=5e6,dst=fib,flows=10000,zipf=1.1,size=imix,
// proto=tcp,seed=7"); keys left out keep GenSpec's defaults. Keys: count (integer or e-notation,
// > 0), dst (uniform|fib), flows (0..min(count, kMaxGenFlows)), zipf (>= 0, needs flows > 0), size
// (64..1518 or imix), proto (udp|tcp), seed. Throws std::invalid_argument naming the offending key
// or value and listing the valid keys on an unknown key, a bad value or a repeated key.
GenSpec parse_gen_spec(const std::string& spec);

// A destination of dst=uniform: 1.0.0.0-223.255.255.255 without 127/8, uniformly.
uint32_t uniform_unicast_ipv4(Rng& rng);

// Throws std::invalid_argument for a spec TrafficGenerator cannot make (sizes, protocol, zipf,
// flows).
void validate_gen_spec_values(const GenSpec& spec);

// validate_gen_spec_values(), and throws std::invalid_argument for a spec whose frames would not
// fit in this machine's memory: what generate() (and io/flow_traffic.h) cannot make.
void validate_gen_spec(const GenSpec& spec);

// The mean captured size of a spec's frames (FCS excluded): the fixed size, or IMIX's 358 bytes.
double mean_frame_bytes(const GenSpec& spec);

// The canonical spec string of `spec`, with every key; parse_gen_spec() reads it back.
std::string format_gen_spec(const GenSpec& spec);

// The frame sizes of a spec in order, FCS excluded: fixed, or the simple IMIX shuffled in blocks of
// 12 by an Rng on `stream` of the spec's seed. Both generators take their sizes from it.
class FrameSizes {
 public:
  FrameSizes(const GenSpec& spec, uint64_t stream);
  uint32_t next();

 private:
  GenSpec spec_;
  Rng rng_;
  uint32_t block_[12] = {};
  uint32_t k_ = 12;
};

// Makes a spec's frames a chunk at a time, so that any count takes bounded memory (tandem gen
// writes them to a file as they come). The frames are generate()'s, in the same order.
class TrafficGenerator {
 public:
  // `fib_prefixes` holds (network address in host order, prefix length) pairs and is only used
  // for dst=fib. Throws std::invalid_argument("dst=fib needs a FIB") when dst=fib and the list is
  // empty, and on a prefix length over 32 or an invalid spec (validate_gen_spec_values).
  TrafficGenerator(const GenSpec& spec, const std::vector<std::pair<uint32_t, uint8_t>>& fib_prefixes = {});
  ~TrafficGenerator();
  TrafficGenerator(const TrafficGenerator&) = delete;
  TrafficGenerator& operator=(const TrafficGenerator&) = delete;

  // Replaces the frames of `out` with the next ones, up to `max_packets` of them; returns how many
  // (0 once all spec.count frames were made). `out`'s buffers are reused.
  uint64_t next(PacketStore& out, uint64_t max_packets);

 private:
  struct State;
  std::unique_ptr<State> st_;
};

// Generates spec.count frames at once, in memory: TrafficGenerator's, after validate_gen_spec().
PacketStore generate(const GenSpec& spec,
                     const std::vector<std::pair<uint32_t, uint8_t>>& fib_prefixes = {});

}  // namespace tandem
