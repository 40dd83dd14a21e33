// The packet hashing app: its digests against OpenSSL's per payload and per chunk (the GPU's code
// on the host too), the fingerprint table's semantics (FIFO eviction within a set, bounded memory,
// one "new" per fingerprint under concurrent inserts), verdicts on crafted packets on every CPU
// path and by the reference, malformed packets dropped with their reasons, learning, warm-up from
// a capture, and the flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "apps/crypto/digest_cpu.h"
#include "apps/hashing/fingerprint_table.h"
#include "apps/hashing/hashing_app.h"
#include "apps/hashing/hashing_gpu.h"
#include "apps/hashing/hashing_setup.h"
#include "apps/registry.h"
#include "core/byte_order.h"
#include "core/checksum.h"
#include "core/rng.h"
#include "gpu/frame_runner.h"
#include "io/flow_traffic.h"
#include "io/pcap_io.h"
#include "tests/pipeline_runs.h"
#include "tests/test_util.h"

namespace tandem::hashing {
namespace {

using crypto::DigestAlgo;

constexpr DigestAlgo kAlgos[] = {DigestAlgo::kMd5, DigestAlgo::kSha1, DigestAlgo::kSha256};

std::vector<uint8_t> bytes_of(uint64_t seed, uint32_t n) {
  Rng rng(seed, 1);
  std::vector<uint8_t> p(n);
  for (uint8_t& b : p) b = static_cast<uint8_t>(rng.next());
  return p;
}

std::vector<uint8_t> openssl(DigestAlgo a, const uint8_t* p, uint32_t n) {
  std::vector<uint8_t> d(crypto::kMaxDigestBytes, 0);
  crypto::openssl_digest(a, p, n, d.data());
  return d;
}

// A frame carrying `payload` exactly: IPv4 or IPv6, UDP (17) or TCP (6).
std::vector<uint8_t> frame_with(const std::vector<uint8_t>& payload, uint8_t proto = 17, int ip_version = 4,
                                uint64_t index = 0) {
  GenFlow f;
  f.ip_version = ip_version;
  f.exact_payload = true;
  f.payload = payload;
  f.src[0] = ip_version == 6 ? 0xFD : 10;
  f.dst[0] = ip_version == 6 ? 0x20 : 192;
  f.dst[15] = f.dst[3] = static_cast<uint8_t>(index + 1);
  f.sport = static_cast<uint16_t>(1000 + index);
  f.dport = 80;
  std::vector<uint8_t> frame(std::max<uint32_t>(60, min_frame_len(f, proto)));
  write_flow_frame(frame.data(), static_cast<uint32_t>(frame.size()), f, proto, index);
  return frame;
}

void set_ipv4_checksum(std::vector<uint8_t>& frame) {
  frame[24] = frame[25] = 0;
  store_be16(frame.data() + 24, ipv4_header_checksum(frame.data() + 14, 20));
}

// The scalar path's verdict of every frame, one frame per burst.
std::vector<uint32_t> verdicts(const ForwardApp& app, const std::vector<std::vector<uint8_t>>& frames) {
  PacketPool pool(4);
  Counters c(app.ports());
  std::vector<uint32_t> v;
  for (const auto& f : frames) {
    PacketBatch b;
    b.size = 1;
    b.cell[0] = 0;
    b.len[0] = static_cast<uint16_t>(f.size());
    std::memcpy(pool.data(0), f.data(), f.size());
    app.forward_scalar(pool, b, c);
    v.push_back(b.verdict[0]);
  }
  return v;
}

PacketStore store_of(const std::vector<std::vector<uint8_t>>& frames) {
  PacketStore s;
  for (const auto& f : frames) s.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), 0);
  return s;
}

TEST(Hashing, ItemDigestsAreOpensslsPerPayloadAndChunk) {
  const uint32_t lengths[] = {1, 2, 55, 56, 63, 64, 65, 119, 120, 128, 200, 507, 508, 509, 1000, 1472};
  for (DigestAlgo a : kAlgos) {
    for (uint32_t chunk : {0u, 64u, 100u, 512u}) {
      HashingConfig c;
      c.algo = a;
      c.chunk = chunk;
      HashingSetup setup(c, 64);
      auto app = make_hashing_app(setup);
      const std::string what = std::string(crypto::digest_name(a)) + " chunk " + std::to_string(chunk);
      ASSERT_EQ(app->result_bytes(), chunk ? sizeof(HashDigests<kChunkSlots>) : sizeof(HashDigests<1>)) << what;
      for (uint32_t n : lengths) {
        const std::vector<uint8_t> payload = bytes_of(n * 7 + chunk, n);
        const std::vector<uint8_t> frame = frame_with(payload);
        std::vector<uint8_t> item(app->item_bytes()), got(app->result_bytes());
        ASSERT_TRUE(app->item_of_frame(frame.data(), static_cast<uint32_t>(frame.size()), item.data())) << what;
        app->lookup_items_scalar(item.data(), got.data(), 1);
        std::vector<uint8_t> batched(app->result_bytes());
        app->lookup_items(item.data(), batched.data(), 1);
        EXPECT_EQ(got, batched) << what << " n " << n;
        HashItem it;
        std::memcpy(&it, item.data(), sizeof it);
        const uint32_t chunks = chunk_count(n, chunk);
        const bool fits = n <= HashItem::kBytes && chunks <= (chunk ? kChunkSlots : 1);
        // The GPU's digest code, run on the host, gives the same bytes.
        std::vector<uint8_t> gpu_code(app->result_bytes());
        if (chunk) {
          const auto r = digest_item<kChunkSlots>(a, chunk, it);
          std::memcpy(gpu_code.data(), &r, sizeof r);
        } else {
          const auto r = digest_item<1>(a, chunk, it);
          std::memcpy(gpu_code.data(), &r, sizeof r);
        }
        EXPECT_EQ(got, gpu_code) << what << " n " << n;
        uint16_t count = 0;
        std::memcpy(&count, got.data(), sizeof count);
        if (!fits) {
          EXPECT_EQ(count, HashDigests<1>::kResolveOnWorker) << what << " n " << n;
          continue;
        }
        ASSERT_EQ(count, chunks) << what << " n " << n;
        for (uint32_t i = 0; i < chunks; ++i) {
          const uint32_t off = chunk ? i * chunk : 0, len = chunk ? std::min(chunk, n - off) : n;
          const std::vector<uint8_t> want = openssl(a, payload.data() + off, len);
          EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + 4 + i * crypto::kMaxDigestBytes))
              << what << " n " << n << " chunk " << i;
        }
      }
    }
  }
}

TEST(FingerprintTable, EvictsTheOldestOfAFullSetAndStaysBounded) {
  FingerprintTable t(100);  // rounded up: 16 sets of 8
  EXPECT_EQ(t.slot_count(), 128u);
  EXPECT_EQ(t.set_count(), 16u);
  const uint64_t set = 5;
  auto fp = [&](uint64_t k) { return (k << 20) | set; };  // all in one set
  for (uint64_t k = 1; k <= 8; ++k) EXPECT_EQ(t.insert(fp(k)), FingerprintTable::Insert::kInserted);
  EXPECT_EQ(t.insert(fp(3)), FingerprintTable::Insert::kPresent);  // present: not moved
  EXPECT_TRUE(t.contains(fp(1)));
  EXPECT_EQ(t.insert(fp(9)), FingerprintTable::Insert::kEvicted);  // replaces 1, the oldest
  EXPECT_FALSE(t.contains(fp(1)));
  EXPECT_TRUE(t.contains(fp(2)) && t.contains(fp(9)));
  EXPECT_TRUE(t.contains(fp(3)));  // a hit does not refresh: 2, then 3 go next
  EXPECT_EQ(t.insert(fp(10)), FingerprintTable::Insert::kEvicted);
  EXPECT_EQ(t.insert(fp(11)), FingerprintTable::Insert::kEvicted);
  EXPECT_FALSE(t.contains(fp(2)) || t.contains(fp(3)));
  for (uint64_t k = 4; k <= 11; ++k) EXPECT_TRUE(t.contains(fp(k))) << k;
  EXPECT_FALSE(t.contains(fp(4) + 1));  // the other sets are untouched
  EXPECT_EQ(t.inserted(), 11u);
  EXPECT_EQ(t.evicted(), 3u);

  // Far more fingerprints than slots: the memory stays what the capacity asked for.
  FingerprintTable big(uint64_t{1} << 16);
  const size_t bytes = big.memory_bytes();
  EXPECT_LE(bytes, size_t{2} << 20);  // 8.5 bytes a slot, in 2 MiB pages
  for (uint64_t i = 1; i <= 1'000'000; ++i) big.insert(mix64(i));  // never 0 for these
  EXPECT_EQ(big.memory_bytes(), bytes);
  EXPECT_EQ(big.inserted() - big.evicted(), big.slot_count());  // full, every set
}

TEST(FingerprintTable, ConcurrentInsertsGiveOneNewPerFingerprint) {
  FingerprintTable t(uint64_t{1} << 20);
  constexpr int kThreads = 4;
  constexpr uint64_t kDistinct = 100'000;  // under one a set on average: no set overflows
  std::vector<uint64_t> fps(kDistinct);
  for (uint64_t i = 0; i < kDistinct; ++i) fps[i] = mix64(i + 1);
  std::atomic<uint64_t> inserted{0}, present{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      std::vector<uint64_t> mine = fps;
      Rng rng(w + 1, 2);
      for (size_t i = mine.size(); i > 1; --i) std::swap(mine[i - 1], mine[rng.below(i)]);
      uint64_t in = 0, pr = 0;
      for (uint64_t fp : mine) (t.insert(fp) == FingerprintTable::Insert::kPresent ? pr : in)++;
      inserted += in;
      present += pr;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(inserted.load(), kDistinct);
  EXPECT_EQ(present.load(), kDistinct * (kThreads - 1));
  EXPECT_EQ(t.evicted(), 0u);
  for (uint64_t fp : fps) ASSERT_TRUE(t.contains(fp));
}

TEST(Hashing, FingerprintZeroIsStoredAsOne) {
  uint8_t zero[32] = {};
  EXPECT_EQ(fingerprint(zero), 1u);
  uint8_t d[32] = {0x78, 0x56, 0x34, 0x12};
  EXPECT_EQ(fingerprint(d), 0x12345678u);
}

// The crafted traffic of the verdict tests: warm payloads, new ones, a chunk shared with a warm
// payload, empty payloads, and malformed frames.
struct Crafted {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<uint32_t> want;
};

Crafted crafted(const std::vector<uint8_t>& warm, const std::vector<uint8_t>& warm_long, uint32_t chunk) {
  Crafted c;
  auto add = [&](std::vector<uint8_t> f, uint32_t v) {
    c.frames.push_back(std::move(f));
    c.want.push_back(v);
  };
  const uint32_t redundant = Verdict::port(kRedundantPort), fresh = Verdict::port(kNewPort);
  add(frame_with(warm), redundant);
  add(frame_with(warm, 6), redundant);      // TCP
  add(frame_with(warm, 17, 6), redundant);  // IPv6
  add(frame_with(warm_long, 6), redundant); // longer than an item: digested by the worker
  add(frame_with(bytes_of(99, 300)), fresh);
  add(frame_with(bytes_of(98, 1400), 6, 6), fresh);
  add(frame_with({}), fresh);               // no payload
  add(frame_with({}, 6, 6), fresh);
  // The warm payload's first 64 bytes, then new ones: redundant by chunks only.
  std::vector<uint8_t> mixed(warm.begin(), warm.begin() + 64);
  const std::vector<uint8_t> tail = bytes_of(97, 100);
  mixed.insert(mixed.end(), tail.begin(), tail.end());
  add(frame_with(mixed), chunk == 64 ? redundant : fresh);
  // Malformed: every one dropped with its reason.
  std::vector<uint8_t> f = frame_with(warm);
  add(std::vector<uint8_t>(f.begin(), f.begin() + 10), Verdict::drop(DropReason::kTruncated));
  std::vector<uint8_t> arp = f;
  arp[12] = 0x08, arp[13] = 0x06;
  add(arp, Verdict::drop(DropReason::kNotIp));
  std::vector<uint8_t> bad_sum = f;
  bad_sum[24] ^= 0xFF;
  add(bad_sum, Verdict::drop(DropReason::kBadChecksum));
  std::vector<uint8_t> short_udp = f;
  store_be16(short_udp.data() + 38, 4);  // UDP length below its header
  add(short_udp, Verdict::drop(DropReason::kBadL4));
  std::vector<uint8_t> later_fragment = f;
  store_be16(later_fragment.data() + 20, 0x0010);  // fragment offset 128 bytes
  set_ipv4_checksum(later_fragment);
  add(later_fragment, Verdict::drop(DropReason::kNotHandled));
  return c;
}

TEST(Hashing, VerdictsOnCraftedPacketsOnEveryCpuPathAndTheReference) {
  for (uint32_t chunk : {0u, 64u}) {
    for (DigestAlgo a : kAlgos) {
      HashingConfig c;
      c.algo = a;
      c.chunk = chunk;
      HashingSetup setup(c, 4096);
      const std::vector<uint8_t> warm = bytes_of(1, 200), warm_long = bytes_of(2, 1000);
      setup.warm_up(warm);
      setup.warm_up(warm_long);
      auto app = make_hashing_app(setup);
      app->build_reference();
      const Crafted cr = crafted(warm, warm_long, chunk);
      const std::string what = std::string(crypto::digest_name(a)) + " chunk " + std::to_string(chunk);
      EXPECT_EQ(verdicts(*app, cr.frames), cr.want) << what;
      for (size_t i = 0; i < cr.frames.size(); ++i) {
        std::vector<uint8_t> f = cr.frames[i];
        EXPECT_EQ(app->forward_frame(f.data(), static_cast<uint32_t>(f.size())), cr.want[i]) << what << " frame " << i;
        uint32_t want = 0;
        if (app->reference_verdict(f.data(), static_cast<uint32_t>(f.size()), 14, cr.want[i], &want)) {
          EXPECT_EQ(want, cr.want[i]) << what << " frame " << i;
        } else {
          EXPECT_TRUE(Verdict::is_drop(cr.want[i])) << what << " frame " << i;
        }
      }
      const PacketStore s = store_of(cr.frames);
      WorkersConfig wc;
      wc.path = LookupPath::kScalar;
      const WorkersResult ref = test::run_verified(*app, s, wc);
      EXPECT_EQ(ref.verify_mismatches, 0u) << what;
      EXPECT_EQ(ref.verify_checked, 9u) << what;
      test::check_cpu_paths(*app, s, what, [&](const WorkersResult& r, const std::string& run) {
        EXPECT_EQ(r.counters.tx_per_port, ref.counters.tx_per_port) << run;
        EXPECT_EQ(r.counters.drops, ref.counters.drops) << run;
        EXPECT_EQ(r.verify_mismatches, 0u) << run;
      });
    }
  }
}

TEST(Hashing, CountsRedundantChunksAndBytes) {
  HashingConfig c;
  c.chunk = 64;
  HashingSetup setup(c, 4096);
  const std::vector<uint8_t> warm = bytes_of(1, 200);  // chunks of 64, 64, 64, 8
  setup.warm_up(warm);
  auto app = make_hashing_app(setup);
  std::vector<uint8_t> half(warm.begin(), warm.begin() + 128);
  const std::vector<uint8_t> tail = bytes_of(3, 72);
  half.insert(half.end(), tail.begin(), tail.end());  // 2 of 4 chunks (128 bytes) seen
  verdicts(*app, {frame_with(warm), frame_with(half), frame_with(bytes_of(4, 50)), frame_with({})});
  const HashingCounts n = setup.counts();
  EXPECT_EQ(n.payloads, 3u);
  EXPECT_EQ(n.payload_bytes, 450u);
  EXPECT_EQ(n.chunks, 9u);
  EXPECT_EQ(n.redundant_payloads, 2u);
  EXPECT_EQ(n.redundant_chunks, 6u);
  EXPECT_EQ(n.redundant_bytes, 328u);
}

TEST(Hashing, TheReferenceReplaysEvictionsOfTheWarmUp) {
  HashingConfig c;
  HashingSetup setup(c, 8);  // one set: only the last 8 distinct payloads stay
  std::vector<std::vector<uint8_t>> warm;
  for (int i = 0; i < 20; ++i) warm.push_back(bytes_of(100 + i, 40));
  for (const auto& w : warm) setup.warm_up(w);
  setup.warm_up(warm[19]);  // present: no effect
  auto app = make_hashing_app(setup);
  app->build_reference();
  std::vector<std::vector<uint8_t>> frames;
  for (const auto& w : warm) frames.push_back(frame_with(w));
  const std::vector<uint32_t> v = verdicts(*app, frames);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(v[i], Verdict::port(i >= 12 ? kRedundantPort : kNewPort)) << i;
    uint32_t want = 0;
    ASSERT_TRUE(app->reference_verdict(frames[i].data(), static_cast<uint32_t>(frames[i].size()), 14, v[i], &want));
    EXPECT_EQ(want, v[i]) << i;
  }
  EXPECT_EQ(setup.table().evicted(), 12u);
}

TEST(Hashing, LearningMarksTheFirstCopyNewAndTheRestRedundant) {
  HashingConfig c;
  c.learn = true;
  HashingSetup setup(c, uint64_t{1} << 16);
  const std::vector<uint8_t> warm = bytes_of(1, 300);
  setup.warm_up(warm);
  auto app = make_hashing_app(setup);
  app->build_reference();
  // 500 distinct new payloads, each sent 4 times, interleaved, plus the warm one 100 times.
  std::vector<std::vector<uint8_t>> frames;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 500; ++i) frames.push_back(frame_with(bytes_of(1000 + i, 64 + i), 17, 4, i));
    for (int i = 0; i < 25; ++i) frames.push_back(frame_with(warm, 17, 4, 600 + i));
  }
  const PacketStore s = store_of(frames);
  WorkersConfig wc;
  wc.workers = 3;
  wc.burst = 32;
  wc.path = LookupPath::kBatched;
  wc.ports = app->ports();
  wc.verify = true;
  const WorkersResult r = run_workers(*app, s, wc);
  // Whichever worker brings a payload first, exactly one copy of each is new.
  EXPECT_EQ(r.counters.tx_per_port[kNewPort], 500u);
  EXPECT_EQ(r.counters.tx_per_port[kRedundantPort], 1600u);
  EXPECT_EQ(r.verify_checked, 0u);  // no reference can know the interleaving
  EXPECT_EQ(setup.table().inserted(), 501u);
  // The table stays warm: a second run finds everything.
  const WorkersResult again = run_workers(*app, s, wc);
  EXPECT_EQ(again.counters.tx_per_port[kRedundantPort], s.size());
  // One frame at a time, as the data path does it: it learns too.
  std::vector<uint8_t> f = frame_with(bytes_of(5000, 80));
  EXPECT_EQ(app->forward_frame(f.data(), static_cast<uint32_t>(f.size())), Verdict::port(kNewPort));
  EXPECT_EQ(app->forward_frame(f.data(), static_cast<uint32_t>(f.size())), Verdict::port(kRedundantPort));
  EXPECT_THROW(app->make_frame_runner({}), gpu::GpuError);
}

TEST(Hashing, LoadsFromTheRegistryWithAWarmUpCapture) {
  // The capture's payloads fill the table; generated traffic repeats them.
  const std::string path = test::write_temp_file("hashing", "warm.pcap", "");
  std::vector<std::vector<uint8_t>> warm_frames;
  for (int i = 0; i < 50; ++i) warm_frames.push_back(frame_with(bytes_of(7000 + i, 100 + 10 * i), 17, 4, i));
  warm_frames.push_back(frame_with({}));  // no payload: not part of the warm-up
  {
    PacketWriter w(path, PacketWriter::Format::kPcap);
    for (const auto& f : warm_frames) {
      w.write(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), 0);
    }
    w.close();
  }
  AppArgs args;
  args.set("warmup", path);
  args.set("redundancy", "1");
  LoadedApp a = load_app("hashing", args);
  EXPECT_NE(a.table_desc.find("50 payloads of"), std::string::npos) << a.table_desc;
  a.app->build_reference();
  std::vector<std::vector<uint8_t>> frames(warm_frames.begin(), warm_frames.end() - 1);
  for (uint32_t v : verdicts(*a.app, frames)) EXPECT_EQ(v, Verdict::port(kRedundantPort));
  const PacketStore s = a.generate(parse_gen_spec("count=2000,flows=0,seed=3"));
  WorkersConfig wc;
  const WorkersResult r = test::run_verified(*a.app, s, wc);
  EXPECT_EQ(r.counters.tx_per_port[kRedundantPort], 2000u);
  EXPECT_EQ(r.verify_mismatches, 0u);
  EXPECT_EQ(r.verify_checked, 2000u);
}

TEST(Hashing, GeneratedTrafficRepeatsTheWarmUpWithTheGivenShare) {
  AppArgs args;
  args.set("redundancy", "0.3");
  args.set("payload-bytes", "200");
  LoadedApp a = load_app("hashing", args);
  const PacketStore s = a.generate(parse_gen_spec("count=20000,flows=0,seed=4"));
  WorkersConfig wc;
  a.app->build_reference();
  const WorkersResult r = test::run_verified(*a.app, s, wc);
  EXPECT_NEAR(double(r.counters.tx_per_port[kRedundantPort]) / s.size(), 0.3, 0.02);
  EXPECT_EQ(r.verify_mismatches, 0u);
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s.caplen[i], 14u + 20 + 8 + 200) << i;
}

TEST(Hashing, FlagsAreChecked) {
  auto load = [](std::initializer_list<std::pair<const char*, const char*>> flags) {
    AppArgs args;
    for (const auto& [k, v] : flags) args.set(k, v);
    return load_app("hashing", args);
  };
  EXPECT_THROW(load({{"chunk", "10"}}), UsageError);
  EXPECT_THROW(load({{"warmup", "/nonexistent.pcap"}}), UsageError);
  EXPECT_THROW(load({{"warmup", "x.pcap"}, {"pool", "5"}}), UsageError);
  EXPECT_THROW(load({{"l2-random", "5"}}), UsageError);  // another app's flag
  const LoadedApp a = load({{"digest", "sha256"}, {"chunk", "128"}, {"fingerprints", "1000"}, {"pool", "10"}});
  EXPECT_NE(a.table_desc.find("sha256 of 128-byte chunks; fingerprint table of 1024 slots"), std::string::npos)
      << a.table_desc;
}

#ifdef TANDEM_HAVE_CUDA
constexpr bool kWithCuda = true;
#else
constexpr bool kWithCuda = false;
#endif

TEST(Hashing, GpuPartsRegisteredExactlyWithCuda) {
  EXPECT_EQ(DigestRunnerFactory::registered(), kWithCuda);
  EXPECT_EQ(gpu::FrameRunnerFactory<HashingCore>::registered(), kWithCuda);
}

// On a GPU: the item kernel's digests equal the CPU's (OpenSSL) byte for byte, every algorithm,
// whole payloads and chunks, payloads that fit an item and payloads that do not.
TEST(Hashing, GpuDigestsAreTheCpus) {
  TANDEM_REQUIRE_GPU();
  for (uint32_t chunk : {0u, 64u}) {
    for (DigestAlgo a : kAlgos) {
      HashingConfig c;
      c.algo = a;
      c.chunk = chunk;
      HashingSetup setup(c, 64);
      auto app = make_hashing_app(setup);
      std::vector<uint8_t> items;
      for (uint32_t n = 1; n <= 1472; n += 7) {
        const std::vector<uint8_t> f = frame_with(bytes_of(n, n));
        const size_t at = items.size();
        items.resize(at + app->item_bytes());
        ASSERT_TRUE(app->item_of_frame(f.data(), static_cast<uint32_t>(f.size()), items.data() + at));
      }
      const size_t n = items.size() / app->item_bytes();
      std::vector<uint8_t> cpu(n * app->result_bytes()), on_gpu(n * app->result_bytes());
      app->lookup_items_scalar(items.data(), cpu.data(), n);
      gpu::OffloadOptions oo;
      oo.capacity = 64;
      auto runner = app->make_gpu_runner(oo);
      gpu::run_all(*runner, items.data(), on_gpu.data(), n);
      EXPECT_EQ(cpu, on_gpu) << crypto::digest_name(a) << " chunk " << chunk;
    }
  }
}

}  // namespace
}  // namespace tandem::hashing
