// The hashing app: packet payload digests against a fingerprint table, for redundancy elimination
// (hashing_app.h).
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "apps/hashing/hashing_app.h"
#include "apps/hashing/hashing_setup.h"
#include "apps/registry.h"

namespace tandem::hashing {
namespace {

constexpr uint64_t kDefaultFingerprints = uint64_t{1} << 20;
constexpr uint64_t kDefaultPool = 4096;
constexpr double kDefaultRedundancy = 0.5;
constexpr uint64_t kWarmUpSeed = 1;

struct HashingState : AppState {
  std::unique_ptr<HashingSetup> setup;
};

DigestAlgo algo_of(const std::string& name) {
  if (name == "md5") return DigestAlgo::kMd5;
  if (name == "sha256") return DigestAlgo::kSha256;
  if (name.empty() || name == "sha1") return DigestAlgo::kSha1;
  throw UsageError("--digest: md5, sha1 or sha256, not '" + name + "'");
}

LoadedApp load(const AppArgs& args) {
  if (args.has("warmup") && args.has("pool")) {
    throw UsageError("--pool sizes the generated warm-up; with --warmup FILE the capture's payloads are the warm-up");
  }
  HashingConfig c;
  c.algo = algo_of(args.text("digest"));
  c.chunk = static_cast<uint32_t>(args.integer("chunk", 0));
  c.learn = args.text("learn") == "on";
  const uint64_t capacity = args.integer("fingerprints", kDefaultFingerprints);
  const uint32_t payload_bytes = static_cast<uint32_t>(args.integer("payload-bytes", 0));
  const double redundancy = args.real("redundancy", kDefaultRedundancy);

  auto st = std::make_unique<HashingState>();
  const auto t0 = std::chrono::steady_clock::now();
  std::string source;
  try {
    st->setup = std::make_unique<HashingSetup>(c, capacity);
    if (args.has("warmup")) {
      const uint64_t n = warm_up_from_capture(*st->setup, args.text("warmup"));
      source = std::to_string(n) + " payloads of " + args.text("warmup");
    } else {
      const uint64_t n = args.integer("pool", kDefaultPool);
      warm_up_generated(*st->setup, n, payload_bytes, kWarmUpSeed);
      source = std::to_string(n) + " generated payloads";
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--app hashing: ") + e.what());
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--app hashing: ") + e.what());
  }
  LoadedApp a;
  char took[64];
  std::snprintf(took, sizeof took, ", built in %.2f s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  a.table_desc = st->setup->describe(source) + took;
  a.app = make_hashing_app(*st->setup);
  const HashingSetup* setup = st->setup.get();
  a.generate = [setup, redundancy, payload_bytes](const GenSpec& spec) {
    return generate_hashing_traffic(*setup, spec, redundancy, payload_bytes);
  };
  a.state = std::move(st);
  return a;
}

AppSpec spec() {
  AppSpec s;
  s.name = "hashing";
  s.description =
      "packet hashing for redundancy elimination: MD5/SHA-1/SHA-256 of payloads or chunks against a fingerprint "
      "table; port 0 new content, port 1 seen before";
  s.flags = {
      {"digest", AppFlag::Kind::kChoice, "the digest of each payload or chunk", 0, 0, "md5|sha1|sha256", "sha1"},
      {"chunk", AppFlag::Kind::kInteger,
       "digest fixed-size chunks of this many bytes (64..16384, the last one partial); 0: whole payloads", 0,
       double(kMaxChunk), "", "0"},
      {"fingerprints", AppFlag::Kind::kInteger,
       "fingerprint table slots (rounded up to a power of two; sets of 8, the oldest replaced when full)", 1,
       double(uint64_t{1} << 32), "", std::to_string(kDefaultFingerprints)},
      {"learn", AppFlag::Kind::kChoice,
       "on: the data path also inserts new fingerprints (verdicts then depend on how workers interleave; no "
       "--verify); off: it only looks up the warm-up's",
       0, 0, "off|on", "off"},
      {"warmup", AppFlag::Kind::kFile, "fill the fingerprint table with this capture's payloads instead of a generated pool"},
      {"pool", AppFlag::Kind::kInteger, "random payloads in the generated warm-up", 0, double(uint64_t{1} << 20), "",
       std::to_string(kDefaultPool)},
      {"redundancy", AppFlag::Kind::kShare, "share of generated flows whose payload repeats a warm-up payload", 0, 1, "",
       "0.5"},
      {"payload-bytes", AppFlag::Kind::kInteger, "bytes of each generated payload; 0: 1..1472, uniformly", 0,
       double(kMaxGenPayload), "", "0"},
  };
  s.load = load;
  s.test_cases = [](const auto&) {
    AppArgs chunks;
    chunks.set("digest", "md5");
    chunks.set("chunk", "64");
    AppArgs evicting;  // 1000 payloads of 1..6 chunks into 512 slots
    evicting.set("digest", "sha256");
    evicting.set("chunk", "256");
    evicting.set("fingerprints", "512");
    evicting.set("pool", "1000");
    return std::vector<AppTestCase>{{"hashing-sha1", {}, "count=20000,flows=0,seed=21"},
                                    {"hashing-md5-chunks", chunks, "count=20000,flows=3000,proto=tcp,seed=22"},
                                    {"hashing-sha256-evicting", evicting, "count=20000,flows=0,seed=23"}};
  };
  return s;
}

}  // namespace
}  // namespace tandem::hashing

TANDEM_REGISTER_APP(tandem::hashing::spec)
