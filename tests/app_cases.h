// The registered apps' test cases (apps/registry.h) and what the pipeline tests compare runs
// with: shared by tests/apps_pipeline_test.cc, tests/resident_test.cc and sched/hetero_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "apps/registry.h"
#include "core/packet_pool.h"
#include "io/packet_source.h"
#include "io/packet_store.h"
#include "io/traffic_gen.h"
#include "sched/workers.h"
#include "tests/test_util.h"

namespace tandem {

struct Case {
  std::string app;
  AppTestCase t;
};
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.t.label << " " << c.t.gen; }

// Why the case's app, with its flags, has no GPU path (AppSpec::no_gpu_path); "" when it has one.
inline std::string no_gpu_path(const Case& c) {
  const AppSpec* spec = find_app(c.app);
  return spec->no_gpu_path ? spec->no_gpu_path(c.t.args) : std::string();
}

// Every registered app's cases (apps/registry.h); a case whose data file is absent is left out.
inline std::vector<Case> cases() {
  const auto data = [](const std::string& path) {
    for (const std::string& p : {test::source_path(path), test::shared_data_path(path)}) {
      if (std::ifstream(p).good()) return p;
    }
    return std::string();
  };
  std::vector<Case> v;
  for (const AppSpec& spec : apps()) {
    if (!spec.test_cases) continue;
    for (AppTestCase& t : spec.test_cases(data)) {
      bool complete = true;
      for (const auto& [flag, value] : t.args.values()) complete = complete && !value.empty();
      if (complete) v.push_back({spec.name, std::move(t)});
    }
  }
  return v;
}

// A case's name in a parameterized test's name (GoogleTest takes letters, digits and '_').
struct CaseName {
  std::string operator()(const ::testing::TestParamInfo<Case>& info) const {
    std::string n = info.param.t.label;
    for (char& ch : n) ch = ch == '-' ? '_' : ch;
    return n;
  }
};

// Frames every app must drop, each for a reason: truncated, not IP, and the app's own.
inline void add_bad_frames(PacketStore& s) {
  std::vector<uint8_t> f(s.frame(0), s.frame(0) + s.caplen[0]);
  s.add(f.data(), 10, 10, 0);  // truncated Ethernet header
  std::vector<uint8_t> arp = f;
  arp[12] = 0x08;
  arp[13] = 0x06;
  s.add(arp.data(), static_cast<uint32_t>(arp.size()), static_cast<uint32_t>(arp.size()), 0);
  s.add(f.data(), 20, 20, 0);  // truncated IP header
}

// Every frame of `s` and its verdict after the app's scalar path, frames rewritten as it left them.
struct Forwarded {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<uint32_t> verdicts;
};
inline Forwarded forward_scalar(const ForwardApp& app, const PacketStore& s) {
  Forwarded out;
  PacketPool pool(PacketBatch::kCapacity);
  Counters c(app.ports());
  for (size_t base = 0; base < s.size(); base += PacketBatch::kCapacity) {
    PacketBatch b;
    b.size = static_cast<uint32_t>(std::min<size_t>(PacketBatch::kCapacity, s.size() - base));
    for (uint32_t i = 0; i < b.size; ++i) {
      b.cell[i] = i;
      b.len[i] = static_cast<uint16_t>(s.caplen[base + i]);
      std::memcpy(pool.data(i), s.frame(base + i), s.caplen[base + i]);
    }
    app.forward_scalar(pool, b, c);
    for (uint32_t i = 0; i < b.size; ++i) {
      out.frames.emplace_back(pool.data(i), pool.data(i) + b.len[i]);
      out.verdicts.push_back(b.verdict[i]);
    }
  }
  return out;
}

// The scalar path's forwarded frames, in input order.
inline std::vector<std::vector<uint8_t>> forwarded_frames(const Forwarded& f) {
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < f.frames.size(); ++i) {
    if (!Verdict::is_drop(f.verdicts[i])) out.push_back(f.frames[i]);
  }
  return out;
}

inline void expect_same(const WorkersResult& a, const WorkersResult& b, const std::string& what) {
  EXPECT_EQ(a.counters.rx_packets, b.counters.rx_packets) << what;
  EXPECT_EQ(a.counters.tx_per_port, b.counters.tx_per_port) << what;
  EXPECT_EQ(a.counters.tx_flooded, b.counters.tx_flooded) << what;
  EXPECT_EQ(a.counters.drops, b.counters.drops) << what;
  EXPECT_TRUE(b.counters.balanced()) << what;
  EXPECT_EQ(b.counters.rx_packets, b.expected) << what;
  EXPECT_EQ(b.verify_mismatches, 0u) << what;
  EXPECT_GT(b.verify_checked, 0u) << what;
}

// Keeps what a path sends to its output: the forwarded frames, in order.
class CollectingSink final : public PacketSink {
 public:
  void tx_burst(const PacketPool& pool, const PacketBatch& b, Counters&) override {
    for (uint32_t i = 0; i < b.size; ++i) {
      if (Verdict::is_drop(b.verdict[i])) continue;
      frames.emplace_back(pool.data(b.cell[i]), pool.data(b.cell[i]) + b.len[i]);
    }
  }
  std::vector<std::vector<uint8_t>> frames;
};

// A case's app with its reference built, its traffic with the frames every app must drop, the
// scalar workers' counters over it and the scalar path's frames and verdicts.
struct LoadedCase {
  LoadedApp a;
  PacketStore s;
  WorkersResult ref;
  Forwarded scalar;
};
inline LoadedCase load_case(const Case& c) {
  LoadedCase l{load_app(c.app, c.t.args), {}, {}, {}};
  l.a.app->build_reference();
  l.s = l.a.generate(parse_gen_spec(c.t.gen));
  add_bad_frames(l.s);
  WorkersConfig wc;
  wc.path = LookupPath::kScalar;
  wc.ports = l.a.app->ports();
  wc.verify = true;
  l.ref = run_workers(*l.a.app, l.s, wc);
  l.scalar = forward_scalar(*l.a.app, l.s);
  return l;
}

}  // namespace tandem
