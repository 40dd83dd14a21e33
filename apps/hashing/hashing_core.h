// The packet hashing app's per-packet pieces, written once for the host and the GPU: where a
// packet's content is (its transport payload), how it is cut into chunks, the fingerprint of a
// digest, the read side of the fingerprint table, the data blocks of the item path (a payload in,
// its digests out) and the whole-frame core (apps/frame_core.h). The digests themselves are
// apps/crypto/digest_core.h's on the GPU and OpenSSL's on the CPU paths (hashing_app.h).
#pragma once

#include <cstdint>

#include "apps/crypto/digest_core.h"
#include "core/batch.h"
#include "core/drop_reason.h"
#include "core/flow_hash.h"
#include "core/parse_impl.h"

namespace tandem::hashing {

using crypto::DigestAlgo;

// Port 0: every chunk of the payload is new content. Port 1: at least one chunk was seen before,
// so a redundancy-elimination encoder would send a reference to it instead of its bytes.
inline constexpr uint32_t kNewPort = 0;
inline constexpr uint32_t kRedundantPort = 1;
inline constexpr uint32_t kPorts = 2;

// The smallest chunk: a reference to fewer bytes saves little of what it replaces, and the bound
// fixes how many digests one item's result must hold (kChunkSlots). The largest is past any frame
// the packet pool holds: such a chunk is the whole payload.
inline constexpr uint32_t kMinChunk = 64;
inline constexpr uint32_t kMaxChunk = 16384;

// What the packet path digests: the transport payload, where it lies in the frame.
struct HashKey {
  const uint8_t* payload;
  uint32_t len;
};

// Chunks of a payload of `len` bytes: `chunk` = 0 digests the whole payload as one; otherwise
// fixed-size chunks from its start, the last one partial. An empty payload has none.
TANDEM_HD_INLINE uint32_t chunk_count(uint32_t len, uint32_t chunk) {
  if (len == 0) return 0;
  return chunk == 0 ? 1 : (len + chunk - 1) / chunk;
}
TANDEM_HD_INLINE uint32_t chunk_offset(uint32_t i, uint32_t chunk) { return i * chunk; }
TANDEM_HD_INLINE uint32_t chunk_bytes(uint32_t len, uint32_t chunk, uint32_t i) {
  if (chunk == 0) return len;
  const uint32_t left = len - i * chunk;
  return left < chunk ? left : chunk;
}

// classify() of the frame core and of the CPU paths: the frame's transport payload. Dropped:
// frames that do not parse (core/parse.h's reasons); a malformed transport header (kBadL4); no
// transport header to skip (a later fragment, IPv6 "no next header": kNotHandled, as there is no
// reassembly to put a fragment's bytes in their place). A packet with an empty payload is not
// dropped: it has no content to repeat and goes to kNewPort.
TANDEM_HD_INLINE DropReason hashing_classify(const uint8_t* frame, uint32_t len, HashKey* key, uint16_t* l3_off,
                                             uint32_t* flow) {
  ParsedPacket pp;
  const DropReason r = parse_frame(frame, len, &pp);
  if (r != DropReason::kNone) return r;
  uint32_t off = 0, n = 0;
  if (!transport_payload(frame, pp, &off, &n)) {
    return (pp.flags & kFlagL4Malformed) ? DropReason::kBadL4 : DropReason::kNotHandled;
  }
  key->payload = frame + off;
  key->len = n;
  *l3_off = pp.l3_off;
  if (flow) *flow = flow_hash(pp.tuple);
  return DropReason::kNone;
}

// The table's key for a digest: its first 8 bytes, little-endian (a digest's bytes are uniform, so
// they need no further mixing). 0 marks an empty slot, so a digest starting with 8 zero bytes is
// stored as 1. Two different chunks share a fingerprint with probability 2^-64 per pair: the
// table keeps fingerprints, not digests, as RE systems do, to bound its memory at 8 bytes a chunk.
TANDEM_HD_INLINE uint64_t fingerprint(const uint8_t* digest) {
  const uint64_t fp = load_le64(digest);
  return fp == 0 ? 1 : fp;
}

// The fingerprint table as plain arrays (the read side; fingerprint_table.h owns and fills it):
// sets of kWays 8-byte slots, one cache line each, the set being the fingerprint's low bits.
struct FingerprintView {
  static constexpr uint32_t kWays = 8;
  const uint64_t* slots;  // sets * kWays, 0 = empty
  uint64_t set_mask;      // sets - 1 (sets is a power of two)

  TANDEM_HD_INLINE const uint64_t* set_of(uint64_t fp) const { return slots + (fp & set_mask) * kWays; }
  // For readers while no thread inserts (the table as loaded, its device copy).
  TANDEM_HD_INLINE bool contains(uint64_t fp) const {
    const uint64_t* s = set_of(fp);
    bool hit = false;
    TANDEM_UNROLL
    for (uint32_t w = 0; w < kWays; ++w) hit |= s[w] == fp;
    return hit;
  }
};

// The verdict of a packet: whether any of its chunks was seen before.
TANDEM_HD_INLINE uint32_t hashing_verdict(bool redundant) {
  return Verdict::port(redundant ? kRedundantPort : kNewPort);
}

// ---- The item path's data blocks: a payload in, its digests out ----

// One GPU item: a payload of up to kBytes bytes. The engines' items are at most 512 bytes (the
// persistent runner stages 16 of them in 8 KiB of shared memory, gpu/offload_runner.cuh), so a
// longer payload's item carries the kTooLong mark instead and the worker digests it (apply).
struct alignas(16) HashItem {
  static constexpr uint32_t kBytes = 508;
  static constexpr uint16_t kTooLong = 0xFFFF;
  uint16_t len;  // payload bytes, or kTooLong
  uint16_t reserved;
  uint8_t bytes[kBytes];
};
static_assert(sizeof(HashItem) == 512);

// Digests of one item's chunks: whole payloads need one slot; chunks of kMinChunk bytes or more
// of an item's payload need at most kChunkSlots.
inline constexpr uint32_t kChunkSlots = (HashItem::kBytes + kMinChunk - 1) / kMinChunk;
static_assert(kChunkSlots == 8);

// A lookup's result: the digests of a payload's chunks, each in a 32-byte slot (an MD5 or SHA-1
// digest leaves its slot's tail zero, so results compare as bytes). `count` is kResolveOnWorker
// when the payload's digests do not fit (a payload longer than an item, or more chunks than
// slots): apply() then digests the payload itself.
template <uint32_t kSlots>
struct HashDigests {
  static constexpr uint16_t kResolveOnWorker = 0xFFFF;
  uint16_t count;
  uint16_t payload_len;
  uint8_t digest[kSlots][crypto::kMaxDigestBytes];
};
static_assert(sizeof(HashDigests<1>) == 36 && sizeof(HashDigests<kChunkSlots>) == 260);

// The item of a payload (to_item).
TANDEM_HD_INLINE void make_hash_item(const HashKey& k, HashItem* item) {
  item->reserved = 0;
  if (k.len > HashItem::kBytes) {
    item->len = HashItem::kTooLong;
    return;
  }
  item->len = static_cast<uint16_t>(k.len);
  for (uint32_t i = 0; i < k.len; ++i) item->bytes[i] = k.payload[i];
}

// What the GPU computes per item (hashing_gpu.cu), with digest_core.h's code. The CPU computes the
// same bytes through OpenSSL (HashingTraits::lookup_item).
template <uint32_t kSlots>
TANDEM_HD_INLINE HashDigests<kSlots> digest_item(DigestAlgo algo, uint32_t chunk, const HashItem& item) {
  HashDigests<kSlots> r{};
  const uint32_t n = item.len == HashItem::kTooLong ? kSlots + 1 : chunk_count(item.len, chunk);
  if (n > kSlots) {
    r.count = HashDigests<kSlots>::kResolveOnWorker;
    return r;
  }
  r.count = static_cast<uint16_t>(n);
  r.payload_len = item.len;
  for (uint32_t i = 0; i < n; ++i) {
    crypto::digest(algo, item.bytes + chunk_offset(i, chunk), chunk_bytes(item.len, chunk, i), r.digest[i]);
  }
  return r;
}

// ---- The whole-frame core (apps/frame_core.h) ----

// The whole per-packet logic over the table as loaded: parse, digest every chunk, look its
// fingerprint up, decide. It reads the table and never inserts, so it is the app's logic only
// while the data path does not learn (--learn off); a device copy is a snapshot.
struct HashingCore {
  using Key = HashKey;
  using Result = uint32_t;  // 1 when a chunk was seen before

  FingerprintView table;
  uint64_t slot_count;
  DigestAlgo algo;
  uint32_t chunk;

  TANDEM_HD_INLINE DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
    return hashing_classify(frame, len, key, l3_off, flow);
  }
  TANDEM_HD_INLINE Result lookup(const Key& k) const {
    uint8_t d[crypto::kMaxDigestBytes];
    bool seen = false;
    const uint32_t n = chunk_count(k.len, chunk);
    for (uint32_t i = 0; i < n; ++i) {
      crypto::digest(algo, k.payload + chunk_offset(i, chunk), chunk_bytes(k.len, chunk, i), d);
      seen |= table.contains(fingerprint(d));
    }
    return seen ? 1u : 0u;
  }
  TANDEM_HD_INLINE uint32_t apply(uint8_t*, uint32_t, uint16_t, Result seen) const { return hashing_verdict(seen != 0); }
  template <class F>
  void for_each_array(F&& f) {
    f(table.slots, slot_count);
  }
};

}  // namespace tandem::hashing
