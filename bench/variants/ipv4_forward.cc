#include "bench/variants/ipv4_forward.h"

#include "apps/ipv4/ipv4_cpu.h"

namespace tandem::ipv4 {

namespace {

// Validates packet i; returns true and its destination in *dst when it goes on to the lookup.
inline bool classify_one(PacketPool& pool, PacketBatch& b, uint32_t i, uint32_t* dst, Counters& c) {
  c.received(b.len[i]);
  ParsedPacket pp;
  const DropReason r = ipv4_classify_frame(pool.data(b.cell[i]), b.len[i], &pp, dst);
  if (r != DropReason::kNone) {
    b.verdict[i] = Verdict::drop(r);
    c.drop(r);
    return false;
  }
  b.l3_off[i] = pp.l3_off;
  return true;
}

inline void apply_one(PacketPool& pool, PacketBatch& b, uint32_t i, uint32_t next_hop, Counters& c) {
  const uint32_t v = ipv4_apply_route(pool.data(b.cell[i]) + b.l3_off[i], next_hop);
  b.verdict[i] = v;
  c.verdict(v, b.len[i]);
}

}  // namespace

void classify(PacketPool& pool, PacketBatch& batch, DestinationBatch& dsts, Counters& c,
              const Dir24_8* prefetch) {
  dsts.count = 0;
  for (uint32_t i = 0; i < batch.size; ++i) {
    uint32_t dst;
    if (classify_one(pool, batch, i, &dst, c)) {
      if (prefetch) prefetch_read(&prefetch->tbl24()[dir24_8_tbl24_index(dst)]);
      dsts.dst[dsts.count] = dst;
      dsts.position[dsts.count] = static_cast<uint16_t>(i);
      ++dsts.count;
    }
  }
}

void apply(PacketPool& pool, PacketBatch& batch, const DestinationBatch& dsts, const uint32_t* next_hops,
           Counters& c) {
  for (uint32_t k = 0; k < dsts.count; ++k) apply_one(pool, batch, dsts.position[k], next_hops[k], c);
}

void forward_scalar(const Dir24_8& table, PacketPool& pool, PacketBatch& batch, Counters& c) {
  for (uint32_t i = 0; i < batch.size; ++i) {
    uint32_t dst;
    if (classify_one(pool, batch, i, &dst, c)) apply_one(pool, batch, i, table.lookup(dst), c);
  }
}

void forward_batched(const Dir24_8& table, PacketPool& pool, PacketBatch& batch, Counters& c) {
  DestinationBatch dsts;
  uint32_t next_hops[PacketBatch::kCapacity];
  classify(pool, batch, dsts, c, &table);
  lookup_batched(table, dsts.dst, next_hops, dsts.count);
  apply(pool, batch, dsts, next_hops, c);
}

uint32_t forward_frame_cpu(const Dir24_8& table, uint8_t* frame, uint32_t len) {
  return ipv4_forward_frame(frame, len, table.tbl24(), table.tbl8());
}

}  // namespace tandem::ipv4
