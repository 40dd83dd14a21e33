#include "io/packet_store.h"

namespace tandem {

void PacketStore::add(const uint8_t* data, uint32_t cap, uint32_t wire, uint64_t ts) {
  offset.push_back(bytes.size());
  // insert() with a null range is fine for cap == 0, but a null `data` with cap > 0 is a bug.
  if (cap != 0) bytes.insert(bytes.end(), data, data + cap);
  caplen.push_back(cap);
  wire_len.push_back(wire);
  ts_ns.push_back(ts);
}

uint64_t PacketStore::total_caplen() const {
  // Summed from caplen rather than bytes.size(), so a store whose bytes were reserved or padded
  // by a producer still reports what the frames hold.
  uint64_t total = 0;
  for (uint32_t c : caplen) total += c;
  return total;
}

}  // namespace tandem
