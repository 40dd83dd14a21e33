#include "apps/hashing/hashing_setup.h"

#include <vector>

#include "core/byte_order.h"
#include "core/rng.h"
#include "io/flow_traffic.h"
#include "io/pcap_io.h"

namespace tandem::hashing {

namespace {

// A random payload sized as warm_up_generated says.
std::vector<uint8_t> random_payload(Rng& rng, uint32_t payload_bytes) {
  const uint32_t n = payload_bytes ? payload_bytes : 1 + static_cast<uint32_t>(rng.below(kMaxGenPayload));
  std::vector<uint8_t> p(n);
  for (uint32_t i = 0; i < n; i += 8) {
    const uint64_t r = rng.next();
    for (uint32_t k = 0; k < 8 && i + k < n; ++k) p[i + k] = static_cast<uint8_t>(r >> (8 * k));
  }
  return p;
}

}  // namespace

void warm_up_generated(HashingSetup& setup, uint64_t n, uint32_t payload_bytes, uint64_t seed) {
  Rng rng(seed, /*stream=*/21);
  for (uint64_t i = 0; i < n; ++i) setup.warm_up(random_payload(rng, payload_bytes));
}

uint64_t warm_up_from_capture(HashingSetup& setup, const std::string& path) {
  PcapReader in(path);
  const uint8_t* data = nullptr;
  uint32_t caplen = 0, wire_len = 0;
  uint64_t ts = 0, n = 0;
  while (in.next(&data, &caplen, &wire_len, &ts)) {
    HashKey k{};
    uint16_t l3_off = 0;
    if (hashing_classify(data, caplen, &k, &l3_off, nullptr) != DropReason::kNone || k.len == 0) continue;
    setup.warm_up(std::vector<uint8_t>(k.payload, k.payload + k.len));
    ++n;
  }
  return n;
}

PacketStore generate_hashing_traffic(const HashingSetup& setup, const GenSpec& spec, double redundancy,
                                     uint32_t payload_bytes) {
  const auto& warm = setup.warm_payloads();
  std::vector<uint32_t> pool;  // the warm-up payloads a frame can carry
  for (size_t i = 0; i < warm.size(); ++i) {
    if (warm[i].size() <= kMaxGenPayload) pool.push_back(static_cast<uint32_t>(i));
  }
  return generate_flows(spec, 4, [&](Rng& rng, GenFlow& f) {
    store_be32(f.dst, uniform_unicast_ipv4(rng));
    f.exact_payload = true;
    if (!pool.empty() && rng.unit() < redundancy) {
      f.payload = warm[pool[rng.below(pool.size())]];
    } else {
      f.payload = random_payload(rng, payload_bytes);
    }
  });
}

}  // namespace tandem::hashing
