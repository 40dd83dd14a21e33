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
// Sequence trailers: seq=1 makes the last kSeqTrailerLen (8) bytes of every frame a trailer, the
// big-endian u32 flow index then the big-endian u32 sequence number of the packet in its flow:
// 0, 1, 2, ... in generation order (store order), wrapping after 2^32. The flow index is the
// generator's flow number with flows > 0 (0-based: the k-th flow drawn, rank k+1 for Zipf), and
// with flows=0 (every packet its own flow, sequence number always 0) the packet's index in the
// generated traffic, taken mod 2^32. The trailer lies after the IP datagram: the IP total length
// (IPv6 payload length), the UDP length and the L4 checksum leave it out, so for every app it is
// Ethernet padding, ignored like any other (core/parse_impl.h); the datagram is 8 bytes shorter
// and the frame keeps the size asked for. Where the headers (and, io/flow_traffic.h, the flow's
// payload bytes) leave no room for it, the frame grows just enough: IPv4/TCP at size=64 makes
// 62-byte frames (66 with FCS), IPv4/UDP fits in 60. Without seq (seq=0, the default) frames are
// byte for byte what they were before the key existed. read_seq_trailer() reads one back; an
// app that rewrites a frame's length (IPsec encapsulation) drops the padding, and the trailer
// with it.
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
  bool seq = false;  // a flow index + sequence number trailer after each datagram (above)
};

// The length of a sequence trailer (GenSpec::seq): u32 flow index, u32 sequence number.
inline constexpr uint32_t kSeqTrailerLen = 8;

// Writes a sequence trailer at p[0, kSeqTrailerLen): flow, then seq, both big-endian.
void write_seq_trailer(uint8_t* p, uint32_t flow, uint32_t seq);

// Reads the sequence trailer of a frame: its last kSeqTrailerLen bytes, provided the frame holds
// at least that many bytes after its IP datagram (Ethernet, up to two VLAN tags, then IPv4 by its
// total length or IPv6 by its payload length). False, *flow and *seq untouched, when it does not
// (not IP, truncated, or no room after the datagram). It cannot tell a trailer from other padding:
// it is for frames generated with seq=1 and what apps made of them.
bool read_seq_trailer(const uint8_t* frame, uint32_t caplen, uint32_t* flow, uint32_t* seq);

// Flows are drawn up front and held in memory: at most this many, and never more than `count`
// (no more than `count` of them can appear).
inline constexpr uint32_t kMaxGenFlows = 1u << 24;

// Parses "key=value,key=value,..." (e.g. "count=5e6,dst=fib,flows=10000,zipf=1.1,size=imix,
// proto=tcp,seed=7"); keys left out keep GenSpec's defaults. Keys: count (integer or e-notation,
// > 0), dst (uniform|fib), flows (0..min(count, kMaxGenFlows)), zipf (>= 0, needs flows > 0), size
// (64..1518 or imix), proto (udp|tcp), seed, seq (0|1: sequence trailers, above). Throws
// std::invalid_argument naming the offending key or value and listing the valid keys on an unknown
// key, a bad value or a repeated key.
GenSpec parse_gen_spec(const std::string& spec);

// A destination of dst=uniform: 1.0.0.0-223.255.255.255 without 127/8, uniformly.
uint32_t uniform_unicast_ipv4(Rng& rng);

// Throws std::invalid_argument for a spec TrafficGenerator cannot make (sizes, protocol, zipf,
// flows).
void validate_gen_spec_values(const GenSpec& spec);

// validate_gen_spec_values(), and throws std::invalid_argument for a spec whose frames would not
// fit in this machine's memory: what generate() (and io/flow_traffic.h) cannot make.
void validate_gen_spec(const GenSpec& spec);

// The mean captured size of a spec's frames (FCS excluded): the fixed size, or IMIX's 358 bytes;
// with seq, IPv4 frames grown to hold the trailer counted at their grown size.
double mean_frame_bytes(const GenSpec& spec);

// The canonical spec string of `spec`, with every key but seq, which is written (",seq=1", last)
// only when set: the strings of specs without it stay what they were. parse_gen_spec() reads it
// back.
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
