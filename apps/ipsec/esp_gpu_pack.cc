#include "apps/ipsec/esp_gpu.h"

#include <cstring>

#include "apps/ipsec/esp_frame.h"

namespace tandem::ipsec {

EspPacked pack_esp_frames(EspGpu& g, int slot, SaTable& t, EspGpu::Op op, const PacketStore& s, size_t first,
                          size_t max_frames, size_t max_bytes, std::vector<size_t>* skipped) {
  size_t used = 0, k = 0, i = first;
  for (; i < s.size(); ++i) {
    const size_t room = (s.caplen[i] + kMaxEspGrowth + 15) / 16 * 16;
    if (k == max_frames || used + room > max_bytes) break;
    ParsedPacket pp;
    uint32_t sa = kNoSa;
    uint64_t seq = 0;
    if (parse_frame(s.frame(i), s.caplen[i], &pp) == DropReason::kNone) {
      if (op == EspGpu::Op::kSeal) {
        sa = pp.tuple.proto == kProtoEsp ? kNoSa : t.select(pp.tuple);
        if (sa != kNoSa && !t.next_seq(sa, &seq)) sa = kNoSa;
      } else {
        EspInbound in;
        if (esp_inbound(s.frame(i), pp, &in) == DropReason::kNone) sa = t.find_inbound(in.spi);
        if (sa != kNoSa) seq = t.infer_seq(sa, in.seq_low);
      }
    }
    if (sa == kNoSa) {
      if (skipped) skipped->push_back(i);
      continue;
    }
    g.sas(slot)[k] = sa;
    g.seqs(slot)[k] = seq;
    g.offsets(slot)[k] = static_cast<uint32_t>(used);
    g.lengths(slot)[k] = s.caplen[i];
    std::memcpy(g.bytes(slot) + used, s.frame(i), s.caplen[i]);
    used += room;
    ++k;
  }
  return {k, used, i};
}

}  // namespace tandem::ipsec
