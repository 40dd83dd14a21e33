// Test support for the ipsec app's runs (its tests only): a gateway over generated SAs, traffic
// both ways with replays (in the same batch and much later), tampered and malformed frames, and the
// reference, what the scalar path of a fresh gateway (same SAs, numbers from 1) does with it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "apps/ipsec/ipsec_app.h"
#include "apps/registry.h"
#include "io/traffic_gen.h"
#include "tests/app_cases.h"

namespace tandem::ipsec {

// A gateway's SAs (cipher, number of pairs) and its traffic (frames, size spec).
struct Suite {
  std::string cipher;
  uint64_t sas;
  uint64_t count;
  std::string size;
};

inline LoadedApp gateway(const std::string& cipher, uint64_t sas) {
  AppArgs a;
  a.set("sa-gen", std::to_string(sas));
  a.set("sa-cipher", cipher);
  a.set("ipsec-traffic", "both");
  LoadedApp g = load_app("ipsec", a);
  g.app->build_reference();
  return g;
}

inline bool is_esp(const PacketStore& s, size_t i) {
  const uint8_t* f = s.frame(i);
  return s.caplen[i] > 34 && f[12] == 0x08 && f[13] == 0x00 && f[23] == kProtoEsp;
}

// Both ways, with copies of every fifth ESP frame right behind it (same batch), a tampered copy
// of every eleventh just before it, every thirteenth again at the end (long after the window
// moved on), and the frames every app must drop.
inline PacketStore traffic(const LoadedApp& g, uint64_t count, const std::string& size) {
  const PacketStore gen = g.generate(parse_gen_spec("count=" + std::to_string(count) + ",dst=fib,size=" + size + ",seed=5"));
  PacketStore s;
  std::vector<size_t> late;
  for (size_t i = 0; i < gen.size(); ++i) {
    const bool esp = is_esp(gen, i);
    if (esp && i % 11 == 0) {  // before the original: a new number whose ICV fails moves nothing
      std::vector<uint8_t> f(gen.frame(i), gen.frame(i) + gen.caplen[i]);
      f.back() ^= 0x40;
      s.add(f.data(), gen.caplen[i], gen.wire_len[i], gen.ts_ns[i]);
    }
    s.add(gen.frame(i), gen.caplen[i], gen.wire_len[i], gen.ts_ns[i]);
    if (esp && i % 5 == 0) s.add(gen.frame(i), gen.caplen[i], gen.wire_len[i], gen.ts_ns[i]);
    if (esp && i % 13 == 0) late.push_back(i);
  }
  for (const size_t i : late) s.add(gen.frame(i), gen.caplen[i], gen.wire_len[i], gen.ts_ns[i]);
  add_bad_frames(s);
  return s;
}

// What the scalar path of a fresh gateway does with the frames: forwarded frames in order, counts
// per port and per reason, and the SA state it leaves.
struct Reference {
  std::vector<std::vector<uint8_t>> forwarded;
  std::map<uint32_t, uint64_t> verdicts;
  std::vector<uint64_t> next_seq, top;
};

inline std::vector<uint64_t> next_seqs(const SaTable& t) {
  std::vector<uint64_t> v;
  for (uint32_t i = 0; i < t.size(); ++i) v.push_back(t.sa(i).dir == SaDir::kOut ? t.peek_seq(i) : 0);
  return v;
}
inline std::vector<uint64_t> tops(const SaTable& t) {
  std::vector<uint64_t> v;
  for (uint32_t i = 0; i < t.size(); ++i) v.push_back(t.window(i) ? t.window(i)->top() : 0);
  return v;
}
inline const SaTable& table_of(const LoadedApp& g) { return static_cast<const IpsecApp&>(*g.app).table(); }

inline Reference reference(const std::string& cipher, uint64_t sas, const PacketStore& s) {
  LoadedApp g = gateway(cipher, sas);
  const Forwarded f = forward_scalar(*g.app, s);
  Reference r;
  for (size_t i = 0; i < f.frames.size(); ++i) {
    ++r.verdicts[Verdict::is_drop(f.verdicts[i]) ? f.verdicts[i] : Verdict::port(f.verdicts[i])];
    if (!Verdict::is_drop(f.verdicts[i])) r.forwarded.push_back(f.frames[i]);
  }
  r.next_seq = next_seqs(table_of(g));
  r.top = tops(table_of(g));
  return r;
}

// The run's counters as Reference::verdicts counts them.
inline std::map<uint32_t, uint64_t> counted(const Counters& c) {
  std::map<uint32_t, uint64_t> m;
  for (size_t p = 0; p < c.tx_per_port.size(); ++p) {
    if (c.tx_per_port[p]) m[Verdict::port(static_cast<uint32_t>(p))] = c.tx_per_port[p];
  }
  for (int d = 1; d < kDropReasonCount; ++d) {
    if (c.drops[d]) m[Verdict::drop(static_cast<DropReason>(d))] = c.drops[d];
  }
  return m;
}

}  // namespace tandem::ipsec
