// The hashing app's reference (--verify), written apart from the data path on purpose: digests by
// apps/crypto/digest_core.h's host code (not OpenSSL), full digests in a std::unordered_set (not
// fingerprints in sets of slots), and the table's replacement policy replayed on a plain FIFO per
// set.
#include <algorithm>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "apps/hashing/hashing_app.h"
#include "core/parse.h"

namespace tandem::hashing {

namespace {

// The digest of bytes[0..n) as a string key.
std::string digest_key(DigestAlgo algo, const uint8_t* bytes, uint32_t n) {
  uint8_t d[crypto::kMaxDigestBytes];
  crypto::digest(algo, bytes, n, d);
  return std::string(reinterpret_cast<const char*>(d), crypto::digest_bytes(algo));
}

// Calls f(offset, bytes) for each chunk of a payload of `len` bytes: whole (chunk 0) or cut every
// `chunk` bytes, the last piece shorter.
template <class F>
void for_each_chunk(uint32_t len, uint32_t chunk, F&& f) {
  const uint32_t step = chunk ? chunk : len;
  for (uint32_t off = 0; off < len; off += step) f(off, std::min(step, len - off));
}

}  // namespace

struct HashingReference::Impl {
  DigestAlgo algo;
  uint32_t chunk;
  std::unordered_set<std::string> present;
};

HashingReference::HashingReference(const HashingSetup& setup) : impl_(std::make_unique<Impl>()) {
  Impl& r = *impl_;
  r.algo = setup.config().algo;
  r.chunk = setup.config().chunk;
  // The table's policy: a digest's set is its first 8 bytes read little-endian (0 read as 1) modulo
  // the number of sets; a set keeps its kWays most recently added digests; a digest already in its
  // set is not added again.
  const uint64_t sets = setup.table().set_count();
  std::unordered_map<uint64_t, std::deque<std::string>> fifo;
  for (const std::vector<uint8_t>& payload : setup.warm_payloads()) {
    for_each_chunk(static_cast<uint32_t>(payload.size()), r.chunk, [&](uint32_t off, uint32_t n) {
      std::string d = digest_key(r.algo, payload.data() + off, n);
      uint64_t first8 = 0;
      for (int b = 7; b >= 0; --b) first8 = first8 << 8 | static_cast<uint8_t>(d[b]);
      std::deque<std::string>& q = fifo[(first8 == 0 ? 1 : first8) % sets];
      if (std::find(q.begin(), q.end(), d) != q.end()) return;
      r.present.insert(d);
      q.push_back(std::move(d));
      if (q.size() > FingerprintTable::kWays) {
        r.present.erase(q.front());
        q.pop_front();
      }
    });
  }
}

HashingReference::~HashingReference() = default;

uint32_t HashingReference::verdict(const uint8_t* frame, uint32_t len) const {
  ParsedPacket pp;
  uint32_t off = 0, n = 0;
  if (parse_packet(frame, len, &pp) != DropReason::kNone || !transport_payload(frame, pp, &off, &n)) {
    return Verdict::kUnset;  // dropped before the table: never asked
  }
  bool seen = false;
  for_each_chunk(n, impl_->chunk, [&](uint32_t at, uint32_t bytes) {
    seen = seen || impl_->present.count(digest_key(impl_->algo, frame + off + at, bytes)) > 0;
  });
  return Verdict::port(seen ? kRedundantPort : kNewPort);
}

}  // namespace tandem::hashing
