// Packets held in memory, back to back: what the generator produces, what a pcap is loaded into,
// and what the replay source serves at peak rate (the seeds' "instant I/O" mode).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

struct PacketStore {
  std::vector<uint8_t> bytes;      // all frames, back to back
  std::vector<uint64_t> offset;    // start of frame i in bytes
  std::vector<uint32_t> caplen;    // captured length of frame i
  std::vector<uint32_t> wire_len;  // original length of frame i on the wire (without FCS)
  std::vector<uint64_t> ts_ns;     // timestamp of frame i, ns since the epoch

  size_t size() const { return caplen.size(); }
  const uint8_t* frame(size_t i) const { return bytes.data() + offset[i]; }
  void add(const uint8_t* data, uint32_t cap, uint32_t wire, uint64_t ts);
  uint64_t total_caplen() const;
};

}  // namespace tandem
