#include "io/traffic_gen.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/byte_order.h"
#include "core/parse.h"
#include "io/gen_frames.h"

namespace tandem {

void write_seq_trailer(uint8_t* p, uint32_t flow, uint32_t seq) {
  store_be32(p, flow);
  store_be32(p + 4, seq);
}

bool read_seq_trailer(const uint8_t* frame, uint32_t caplen, uint32_t* flow, uint32_t* seq) {
  uint32_t off = 12;  // the EtherType, after up to two VLAN tags
  for (int tags = 0; tags < 2 && caplen >= off + 2; ++tags) {
    const uint32_t type = load_be16(frame + off);
    if (type != kEthTypeVlan && type != kEthTypeQinQ) break;
    off += 4;
  }
  if (caplen < off + 2) return false;
  const uint32_t type = load_be16(frame + off);
  const uint32_t l3 = off + 2;
  uint64_t l3_len;
  if (type == kEthTypeIpv4 && caplen >= l3 + 20 && (frame[l3] >> 4) == 4) {
    l3_len = load_be16(frame + l3 + 2);
  } else if (type == kEthTypeIpv6 && caplen >= l3 + 40 && (frame[l3] >> 4) == 6) {
    l3_len = 40 + uint64_t{load_be16(frame + l3 + 4)};
  } else {
    return false;
  }
  if (uint64_t{caplen} < l3 + l3_len + kSeqTrailerLen) return false;
  *flow = load_be32(frame + caplen - kSeqTrailerLen);
  *seq = load_be32(frame + caplen - kSeqTrailerLen + 4);
  return true;
}

uint32_t uniform_unicast_ipv4(Rng& rng) {
  // 222 /8s: 1..223 minus 127. Index 0..221 maps to first octet 1..126, 128..223.
  uint32_t a = static_cast<uint32_t>(rng.below(222ull << 24)) + (1u << 24);
  if (a >= (127u << 24)) a += 1u << 24;
  return a;
}
namespace {

constexpr const char* kValidKeys =
    "valid keys: count (integer or e-notation, > 0), dst (uniform|fib), flows (0..count), "
    "zipf (>= 0, needs flows > 0), size (64..1518 or imix), proto (udp|tcp), seed, seq (0|1)";

[[noreturn]] void spec_error(const std::string& what) {
  throw std::invalid_argument("traffic spec: " + what + " (" + kValidKeys + ")");
}

[[noreturn]] void bad_value(const std::string& key, const std::string& value,
                            const std::string& expected) {
  spec_error("bad value '" + value + "' for " + key + ": expected " + expected);
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool parse_double(const std::string& v, double* out) {
  if (v.empty()) return false;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, *out);
  return ec == std::errc() && p == end && std::isfinite(*out);
}

// A non-negative integer written as digits, or (with allow_exp) as e-notation such as 5e6 or
// 1.5e6 whose value is a whole number.
bool parse_uint(const std::string& v, bool allow_exp, uint64_t max, uint64_t* out) {
  if (v.empty()) return false;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, *out);
  if (ec == std::errc() && p == end) return *out <= max;
  if (!allow_exp || v.find_first_of("eE") == std::string::npos) return false;
  double d;
  // 2^53 keeps the conversion exact.
  if (!parse_double(v, &d) || d < 0 || d != std::floor(d) || d > 9007199254740992.0) return false;
  *out = static_cast<uint64_t>(d);
  return *out <= max;
}

enum Stream : uint64_t { kFlowStream = 1, kPickStream = 2, kSizeStream = 3 };

struct Flow {
  uint32_t src, dst;
  uint16_t sport, dport;
  uint32_t seq, ack;  // TCP only
};

struct DstPicker {
  GenSpec::Dst mode;
  std::vector<std::pair<uint32_t, uint64_t>> prefixes;  // network, number of addresses

  uint32_t pick(Rng& rng) const {
    if (mode == GenSpec::Dst::kUniform) {
      return uniform_unicast_ipv4(rng);
    }
    const auto& [net, span] = prefixes[rng.below(prefixes.size())];
    return span == 1 ? net : net + static_cast<uint32_t>(rng.below(span));
  }
};

Flow random_flow(Rng& rng, const DstPicker& dst) {
  Flow f;
  f.dst = dst.pick(rng);
  f.src = (10u << 24) | static_cast<uint32_t>(rng.below(1u << 24));
  f.sport = static_cast<uint16_t>(1024 + rng.below(65536 - 1024));
  f.dport = static_cast<uint16_t>(1024 + rng.below(65536 - 1024));
  const uint64_t r = rng.next();
  f.seq = static_cast<uint32_t>(r);
  f.ack = static_cast<uint32_t>(r >> 32);
  return f;
}

// Writes a complete frame of `len` bytes (without FCS) for packet number `index` of flow `f`.
void build_frame(uint8_t* p, uint32_t len, const Flow& f, uint64_t index, uint8_t proto) {
  static constexpr uint8_t kDstMac[6] = {0x02, 0, 0, 0, 0, 0x01}, kSrcMac[6] = {0x02, 0, 0, 0, 0, 0x02};
  gen::write_eth(p, kDstMac, kSrcMac, kEthTypeIpv4);
  uint8_t* ip = p + kEthHeaderLen;
  const uint32_t pseudo = gen::write_ipv4(ip, len - kEthHeaderLen, static_cast<uint32_t>(index), proto, f.src, f.dst);
  uint8_t* l4 = ip + gen::kIpv4Len;
  const uint32_t l4_len = len - kEthHeaderLen - gen::kIpv4Len;
  const uint32_t hdr_len = gen::write_l4_header(l4, proto, l4_len, f.sport, f.dport, f.seq + static_cast<uint32_t>(index), f.ack);
  gen::fill_pattern(l4 + hdr_len, 0, l4_len - hdr_len, index);
  gen::write_l4_checksum(l4, proto, l4_len, pseudo);
}

// The least captured size of the IPv4 generator's frames: their headers, and the trailer with seq.
uint32_t min_ipv4_frame(const GenSpec& spec) {
  return spec.seq ? kEthHeaderLen + gen::kIpv4Len + gen::l4_header_len(spec.proto) + kSeqTrailerLen : 0;
}

// Asks for transparent hugepages on a large buffer before it is first touched: filling GiBs of
// frames with 4 KiB pages spends most of its time in page faults, and replay then misses the
// TLB on every page. A refusal is harmless.
void advise_hugepages(void* p, size_t bytes) {
  constexpr uintptr_t kHuge = 2u << 20;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
}

}  // namespace

void validate_gen_spec_values(const GenSpec& spec) {
  if (spec.size_mode == GenSpec::Size::kFixed && (spec.frame_size < 64 || spec.frame_size > 1518)) {
    throw std::invalid_argument("traffic spec: frame size " + std::to_string(spec.frame_size) +
                                " is outside 64..1518");
  }
  if (spec.proto != 6 && spec.proto != 17) {
    throw std::invalid_argument("traffic spec: protocol " + std::to_string(spec.proto) +
                                " is neither udp (17) nor tcp (6)");
  }
  if (!(spec.zipf >= 0) || !std::isfinite(spec.zipf)) {
    throw std::invalid_argument("traffic spec: zipf must be a finite number >= 0");
  }
  if (spec.zipf > 0 && spec.flows == 0) {
    throw std::invalid_argument("traffic spec: zipf needs flows > 0");
  }
  if (spec.flows > kMaxGenFlows) {
    throw std::invalid_argument("traffic spec: flows=" + std::to_string(spec.flows) + " is over the maximum, " +
                                std::to_string(kMaxGenFlows) + " (the flows are held in memory)");
  }
  if (spec.flows > spec.count) {
    throw std::invalid_argument("traffic spec: flows=" + std::to_string(spec.flows) + " is more than count=" +
                                std::to_string(spec.count) + ": no more than count flows can appear");
  }
}

double mean_frame_bytes(const GenSpec& spec) {
  const uint32_t least = min_ipv4_frame(spec);
  if (spec.size_mode == GenSpec::Size::kFixed) return std::max(spec.frame_size - 4, least);
  // IMIX 7:4:1 of 60/590/1514 (358 bytes), the 60-byte ones grown to `least` with seq.
  return 358 + 7.0 * (std::max(60u, least) - 60) / 12;
}

void validate_gen_spec(const GenSpec& spec) {
  validate_gen_spec_values(spec);
  // Frames back to back plus 24 bytes of metadata each (offset, lengths, timestamp).
  const double need = static_cast<double>(spec.count) * (mean_frame_bytes(spec) + 24);
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (have > 0 && need > have) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "traffic spec: count=%llu: the frames would take about %.1f GB of memory, more than this "
                  "machine's %.1f GB (tandem gen writes any count to a file without holding it)",
                  static_cast<unsigned long long>(spec.count), need / 1e9, have / 1e9);
    throw std::invalid_argument(msg);
  }
}

GenSpec parse_gen_spec(const std::string& spec) {
  GenSpec g;
  std::vector<std::string> seen;
  std::string zipf_text;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = trim(spec.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) {
      if (trim(spec).empty()) break;  // "" means all defaults
      spec_error("empty item in '" + spec + "'");
    }
    const size_t eq = item.find('=');
    if (eq == std::string::npos) spec_error("item '" + item + "' is not key=value");
    const std::string key = lower(trim(item.substr(0, eq)));
    const std::string value = trim(item.substr(eq + 1));
    const std::string word = lower(value);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      spec_error("duplicate key '" + key + "'");
    }

    uint64_t u = 0;
    if (key == "count") {
      if (!parse_uint(value, true, UINT64_MAX, &u) || u == 0) {
        bad_value(key, value, "an integer > 0, e.g. 1000000 or 1e6");
      }
      g.count = u;
    } else if (key == "dst") {
      if (word == "uniform") {
        g.dst = GenSpec::Dst::kUniform;
      } else if (word == "fib") {
        g.dst = GenSpec::Dst::kFib;
      } else {
        bad_value(key, value, "uniform or fib");
      }
    } else if (key == "flows") {
      if (!parse_uint(value, true, UINT32_MAX, &u)) {
        bad_value(key, value, "an integer >= 0 (0: a new flow per packet)");
      }
      g.flows = static_cast<uint32_t>(u);
    } else if (key == "zipf") {
      double d;
      if (!parse_double(value, &d) || d < 0) bad_value(key, value, "a number >= 0");
      g.zipf = d;
      zipf_text = value;
    } else if (key == "size") {
      if (word == "imix") {
        g.size_mode = GenSpec::Size::kImix;
      } else if (parse_uint(value, false, 1518, &u) && u >= 64) {
        g.size_mode = GenSpec::Size::kFixed;
        g.frame_size = static_cast<uint32_t>(u);
      } else {
        bad_value(key, value, "a frame size 64..1518 (bytes, FCS included) or imix");
      }
    } else if (key == "proto") {
      if (word == "udp") {
        g.proto = 17;
      } else if (word == "tcp") {
        g.proto = 6;
      } else {
        bad_value(key, value, "udp or tcp");
      }
    } else if (key == "seed") {
      if (!parse_uint(value, false, UINT64_MAX, &u)) bad_value(key, value, "an integer >= 0");
      g.seed = u;
    } else if (key == "seq") {
      if (value == "0") {
        g.seq = false;
      } else if (value == "1") {
        g.seq = true;
      } else {
        bad_value(key, value, "0 or 1 (1: a flow index and sequence number trailer in each frame)");
      }
    } else {
      spec_error("unknown key '" + key + "'");
    }
    seen.push_back(key);
  }
  if (g.zipf > 0 && g.flows == 0) spec_error("zipf=" + zipf_text + " needs flows > 0");
  validate_gen_spec_values(g);  // what depends on several keys, e.g. flows and count
  return g;
}

std::string format_gen_spec(const GenSpec& spec) {
  char zipf[32];
  auto [end, ec] = std::to_chars(zipf, zipf + sizeof zipf, spec.zipf);  // shortest round-trip
  (void)ec;  // 32 chars always suffice for a double
  std::string s = "count=" + std::to_string(spec.count);
  s += spec.dst == GenSpec::Dst::kFib ? ",dst=fib" : ",dst=uniform";
  s += ",flows=" + std::to_string(spec.flows);
  s += ",zipf=" + std::string(zipf, end);
  s += spec.size_mode == GenSpec::Size::kImix ? std::string(",size=imix")
                                              : ",size=" + std::to_string(spec.frame_size);
  s += spec.proto == 6 ? ",proto=tcp" : ",proto=udp";
  s += ",seed=" + std::to_string(spec.seed);
  if (spec.seq) s += ",seq=1";  // only when set: specs without it keep their canonical strings
  return s;
}

FrameSizes::FrameSizes(const GenSpec& spec, uint64_t stream) : spec_(spec), rng_(spec.seed, stream) {}

uint32_t FrameSizes::next() {
  if (spec_.size_mode == GenSpec::Size::kFixed) return spec_.frame_size - 4;
  if (k_ == 12) {
    static constexpr uint32_t kImixBlock[12] = {60, 60, 60, 60, 60, 60, 60, 590, 590, 590, 590, 1514};
    std::copy(kImixBlock, kImixBlock + 12, block_);
    for (uint32_t j = 11; j > 0; --j) std::swap(block_[j], block_[rng_.below(j + 1)]);
    k_ = 0;
  }
  return block_[k_++];
}

struct TrafficGenerator::State {
  GenSpec spec;
  DstPicker dst;
  FrameSizes sizes;
  Rng flow_rng;
  Rng pick_rng;
  std::vector<Flow> flows;
  gen::FlowChooser chooser;
  uint64_t made = 0;
  gen::LinkClock clock;
  std::vector<uint32_t> next_seq;  // seq with flows > 0: each flow's next sequence number

  explicit State(const GenSpec& s)
      : spec(s),
        dst{s.dst, {}},
        sizes(s, kSizeStream),
        flow_rng(s.seed, kFlowStream),
        pick_rng(s.seed, kPickStream),
        chooser(s.flows, s.zipf) {}
};

TrafficGenerator::TrafficGenerator(const GenSpec& spec,
                                   const std::vector<std::pair<uint32_t, uint8_t>>& fib_prefixes) {
  validate_gen_spec_values(spec);
  st_ = std::make_unique<State>(spec);
  DstPicker& dst = st_->dst;
  if (spec.dst == GenSpec::Dst::kFib) {
    if (fib_prefixes.empty()) throw std::invalid_argument("dst=fib needs a FIB");
    dst.prefixes.reserve(fib_prefixes.size());
    for (const auto& [addr, len] : fib_prefixes) {
      if (len > 32) {
        throw std::invalid_argument("dst=fib: prefix length " + std::to_string(len) +
                                    " is over 32");
      }
      const uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);
      dst.prefixes.emplace_back(addr & mask, uint64_t{1} << (32 - len));
    }
  }
  st_->flows.resize(spec.flows);
  for (Flow& f : st_->flows) f = random_flow(st_->flow_rng, dst);
  if (spec.seq) st_->next_seq.assign(spec.flows, 0);
}

TrafficGenerator::~TrafficGenerator() = default;

uint64_t TrafficGenerator::next(PacketStore& store, uint64_t max_packets) {
  State& st = *st_;
  const uint64_t n = std::min(max_packets, st.spec.count - st.made);
  store.offset.resize(n);
  store.caplen.resize(n);
  store.wire_len.resize(n);
  store.ts_ns.resize(n);

  // Frame sizes first (FCS excluded), so that the byte buffer is sized once.
  uint64_t total = 0;
  const uint32_t least = min_ipv4_frame(st.spec);
  for (uint64_t i = 0; i < n; ++i) {
    store.caplen[i] = std::max(st.sizes.next(), least);
    store.offset[i] = total;
    total += store.caplen[i];
  }
  if (total > store.bytes.capacity()) {
    store.bytes.clear();
    store.bytes.shrink_to_fit();
    store.bytes.reserve(total);
    advise_hugepages(store.bytes.data(), total);
  }
  store.bytes.resize(total);
  std::copy(store.caplen.begin(), store.caplen.end(), store.wire_len.begin());

  for (uint64_t i = 0; i < n; ++i) store.ts_ns[i] = st.clock.next(store.caplen[i]);

  const uint32_t trailer = st.spec.seq ? kSeqTrailerLen : 0;
  for (uint64_t i = 0; i < n; ++i) {
    Flow fresh;
    const Flow* f = &fresh;
    size_t k = 0;
    if (st.flows.empty()) {
      fresh = random_flow(st.flow_rng, st.dst);
    } else {
      k = st.chooser.next(st.pick_rng);
      f = &st.flows[k];
    }
    uint8_t* p = store.bytes.data() + store.offset[i];
    const uint64_t index = st.made + i;
    build_frame(p, store.caplen[i] - trailer, *f, index, st.spec.proto);
    if (trailer) {
      const uint32_t end = store.caplen[i] - trailer;
      if (st.flows.empty()) {
        write_seq_trailer(p + end, static_cast<uint32_t>(index), 0);
      } else {
        write_seq_trailer(p + end, static_cast<uint32_t>(k), st.next_seq[k]++);
      }
    }
  }
  st.made += n;
  return n;
}

PacketStore generate(const GenSpec& spec,
                     const std::vector<std::pair<uint32_t, uint8_t>>& fib_prefixes) {
  validate_gen_spec(spec);
  TrafficGenerator gen(spec, fib_prefixes);
  PacketStore store;
  gen.next(store, spec.count);
  return store;
}

}  // namespace tandem
