#include "apps/ipv4/ipv4_forward.h"

#include "apps/ipv4/ipv4_cpu.h"
#include "core/checksum.h"
#include "core/parse.h"

namespace tandem::ipv4 {

namespace {

inline uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Validates packet i; returns true and its destination in *dst when it goes on to the lookup.
inline bool classify_one(PacketPool& pool, PacketBatch& b, uint32_t i, uint32_t* dst, Counters& c) {
  const uint8_t* data = pool.data(b.cell[i]);
  ++c.rx_packets;
  c.rx_bytes += b.len[i];
  ParsedPacket pp;
  DropReason r = parse_packet(data, b.len[i], &pp);
  if (r == DropReason::kNone) {
    if (pp.ip_version != 4) {
      r = DropReason::kNotHandled;
    } else {
      const uint8_t* ip = data + pp.l3_off;
      const uint32_t src = load_be32(ip + 12);
      *dst = load_be32(ip + 16);
      if (martian_destination(*dst) || martian_source(src)) {
        r = DropReason::kMartian;
      } else if (pp.ttl <= 1) {
        r = DropReason::kTtlExceeded;
      }
    }
  }
  if (r != DropReason::kNone) {
    b.verdict[i] = Verdict::drop(r);
    c.drop(r);
    return false;
  }
  b.l3_off[i] = pp.l3_off;
  b.flow_hash[i] = flow_hash(pp.tuple);
  return true;
}

inline void apply_one(PacketPool& pool, PacketBatch& b, uint32_t i, uint32_t next_hop, Counters& c) {
  if (next_hop == kNoRoute) {
    b.verdict[i] = Verdict::drop(DropReason::kNoRoute);
    c.drop(DropReason::kNoRoute);
    return;
  }
  ipv4_decrement_ttl(pool.data(b.cell[i]) + b.l3_off[i]);
  b.verdict[i] = Verdict::port(next_hop);
  ++c.tx_packets;
  c.tx_bytes += b.len[i];
  if (next_hop < c.tx_per_port.size()) ++c.tx_per_port[next_hop];
}

}  // namespace

void classify(PacketPool& pool, PacketBatch& batch, KeyBatch& keys, Counters& c,
              const Dir24_8* prefetch) {
  keys.count = 0;
  for (uint32_t i = 0; i < batch.size; ++i) {
    uint32_t dst;
    if (classify_one(pool, batch, i, &dst, c)) {
      if (prefetch) prefetch_read(&prefetch->tbl24()[dir24_8_tbl24_index(dst)]);
      keys.key[keys.count] = dst;
      keys.position[keys.count] = static_cast<uint16_t>(i);
      ++keys.count;
    }
  }
}

void apply(PacketPool& pool, PacketBatch& batch, const KeyBatch& keys, const uint32_t* next_hops,
           Counters& c) {
  for (uint32_t k = 0; k < keys.count; ++k) apply_one(pool, batch, keys.position[k], next_hops[k], c);
}

void forward_scalar(const Dir24_8& table, PacketPool& pool, PacketBatch& batch, Counters& c) {
  for (uint32_t i = 0; i < batch.size; ++i) {
    uint32_t dst;
    if (classify_one(pool, batch, i, &dst, c)) apply_one(pool, batch, i, table.lookup(dst), c);
  }
}

void forward_batched(const Dir24_8& table, PacketPool& pool, PacketBatch& batch, Counters& c) {
  KeyBatch keys;
  uint32_t next_hops[PacketBatch::kCapacity];
  classify(pool, batch, keys, c, &table);
  lookup_batched(table, keys.key, next_hops, keys.count);
  apply(pool, batch, keys, next_hops, c);
}

}  // namespace tandem::ipv4
