// Packet hashing for redundancy elimination (Koromilas et al.): every packet's transport payload,
// whole or in fixed-size chunks, is digested (MD5, SHA-1 or SHA-256) and each digest's fingerprint
// looked up in a bounded fingerprint table (fingerprint_table.h). Port 0: all of the packet's
// content is new; port 1: at least one chunk was seen before, which an RE encoder would send as a
// reference instead of its bytes. Frames are not rewritten.
//
// Dropped: frames that do not parse (core/parse.h's reasons), a malformed transport header
// (kBadL4), no transport header to find the payload after (later fragments: kNotHandled). A packet
// with an empty payload goes to port 0: it carries no content to eliminate. The app has no drop
// reasons of its own.
//
// What "seen before" means, and why the paths agree. The table is filled at load with a warm-up
// (a generated pool of payloads, or the payloads of a capture: --warmup), in order, so its content
// is the same on every run. Then:
//   --learn off (default): the data path only looks fingerprints up. A packet's verdict is a pure
//     function of the packet and the table as loaded, so every path, any number of workers, the
//     GPU's item and whole-frame paths and the reference give the same verdicts, and a run can be
//     repeated. This is a decoder's view: the dictionary both ends share.
//   --learn on: the data path also inserts every new fingerprint, as an RE encoder indexes what it
//     sends: the first packet to carry a chunk goes to port 0, later ones to port 1. Which copy is
//     first depends on how the workers interleave, so verdicts (and, where chunk sets partly
//     overlap or the table evicts, even the per-port counts) may differ between runs with several
//     workers; a run also leaves the table warmer for the next. Insert is atomic per fingerprint
//     (one "new" per content when nothing is evicted). --verify checks nothing here (no reference
//     can know the interleaving), and there is no whole-frame GPU path (a device copy of the
//     table cannot follow the inserts); hashing_test.cc checks the learning semantics directly.
//
// Digests: OpenSSL on the CPU paths (apps/crypto/digest_cpu.h); on the GPU item path the kernel
// digests each item's payload (apps/crypto/digest_core.h) and returns the digests only, and apply()
// does the table on the worker. Payloads longer than an item (508 bytes) are digested by the
// worker. The whole-frame path runs everything (any length) on the GPU against a copy of the table.
// The reference (--verify) digests with digest_core.h's host code and replays the warm-up through
// a plain model of the table (an unordered_set and a FIFO per set).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/crypto/digest_core.h"
#include "apps/forward_app.h"
#include "apps/hashing/fingerprint_table.h"
#include "apps/hashing/hashing_core.h"
#include "apps/hashing/striped_counter.h"

namespace tandem::hashing {

struct HashingConfig {
  DigestAlgo algo = DigestAlgo::kSha1;
  uint32_t chunk = 0;  // 0: whole payloads; else kMinChunk..kMaxChunk bytes
  bool learn = false;  // the data path inserts new fingerprints
};

// What the data path found, summed over every packet that reached the table (any path, any run).
struct HashingCounts {
  uint64_t payloads = 0;            // packets with a payload
  uint64_t payload_bytes = 0;
  uint64_t chunks = 0;
  uint64_t redundant_payloads = 0;  // packets with a chunk seen before (port 1)
  uint64_t redundant_chunks = 0;
  uint64_t redundant_bytes = 0;     // bytes of those chunks: what an RE encoder would not send
};

// The app's state: the configuration, the table, and the warm-up it was filled with.
class HashingSetup {
 public:
  // An empty table of at least `capacity` fingerprints. Throws std::invalid_argument for a bad
  // chunk size, std::runtime_error when OpenSSL cannot compute the digest (MD5 under FIPS).
  HashingSetup(const HashingConfig& config, uint64_t capacity);

  const HashingConfig& config() const { return config_; }
  const FingerprintTable& table() const { return table_; }
  // The warm-up payloads, in the order their chunks went into the table: the reference replays
  // them, the traffic generator repeats them.
  const std::vector<std::vector<uint8_t>>& warm_payloads() const { return warm_; }

  // Inserts the payload's chunks (OpenSSL digests), in order, and keeps it. Load time only.
  void warm_up(std::vector<uint8_t> payload);

  // The data path: one packet's chunk digests, in order, through the table (looked up, or
  // inserted when learning), counted. Thread-safe.
  class Packet {
   public:
    Packet(const HashingSetup& s, uint32_t payload_len) : s_(s), len_(payload_len) {}
    void chunk(const uint8_t* digest, uint32_t bytes);
    uint32_t verdict();  // counts the packet; call once

   private:
    const HashingSetup& s_;
    uint32_t len_;
    uint32_t chunks_ = 0, redundant_chunks_ = 0, redundant_bytes_ = 0;
  };

  HashingCounts counts() const;
  // One line: digest, chunks, table geometry and fill, warm-up, learning.
  std::string describe(const std::string& warm_source) const;

 private:
  HashingConfig config_;
  mutable FingerprintTable table_;  // inserted into by const data-path calls when learning
  std::vector<std::vector<uint8_t>> warm_;
  mutable StripedCounter payloads_, payload_bytes_, chunks_, redundant_payloads_, redundant_chunks_,
      redundant_bytes_;
};

// The app over a setup (which must outlive it): whole payloads carry one digest per result, chunks
// up to kChunkSlots.
std::unique_ptr<ForwardApp> make_hashing_app(HashingSetup& setup);

// The verdict of a frame by the reference: digest_core.h's digests, a plain set of the warm-up's
// digests after the table's FIFO policy. For frames that reach the table.
class HashingReference {
 public:
  explicit HashingReference(const HashingSetup& setup);
  ~HashingReference();
  uint32_t verdict(const uint8_t* frame, uint32_t len) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::hashing
