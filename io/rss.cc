#include "io/rss.h"

#include <stdexcept>

#include "core/flow_hash.h"
#include "core/parse.h"

namespace tandem {

std::vector<std::vector<uint32_t>> rss_split(const PacketStore& store, int queues) {
  if (queues < 1) throw std::invalid_argument("rss: at least one queue");
  if (store.size() > UINT32_MAX) throw std::invalid_argument("rss: more than 2^32 frames");
  std::vector<std::vector<uint32_t>> out(queues);
  for (auto& q : out) q.reserve(store.size() / queues + 1);
  for (size_t i = 0; i < store.size(); ++i) {
    int q = 0;
    ParsedPacket p;
    if (queues > 1 && parse_packet(store.bytes.data() + store.offset[i], store.caplen[i], &p) == DropReason::kNone) {
      q = static_cast<int>(flow_hash(p.tuple) % static_cast<uint32_t>(queues));
    }
    out[q].push_back(static_cast<uint32_t>(i));
  }
  return out;
}

}  // namespace tandem
