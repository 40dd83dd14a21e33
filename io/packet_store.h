// Packets held in memory, back to back: what the generator produces, what a pcap is loaded into,
// and what the replay source serves at peak rate (the seeds' "instant I/O" mode).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/compiler.h"

namespace tandem {

struct PacketStore {
  std::vector<uint8_t> bytes;      // all frames, back to back
  std::vector<uint64_t> offset;    // start of frame i in bytes
  std::vector<uint32_t> caplen;    // captured length of frame i
  std::vector<uint32_t> wire_len;  // original length of frame i on the wire (without FCS)
  std::vector<uint64_t> ts_ns;     // timestamp of frame i, ns since the epoch

  size_t size() const { return caplen.size(); }
  // A replay in RSS order reads each frame's length, offset and bytes at random in a store of many
  // megabytes: fetched one by one, each misses the caches. Readers ask for them ahead, in two
  // steps (the bytes need the offset): the metadata `kPrefetchMeta` frames ahead, the bytes
  // `kPrefetchBytes` ahead.
  static constexpr size_t kPrefetchMeta = 16;
  static constexpr size_t kPrefetchBytes = 8;
  void prefetch_meta(size_t i) const {
    prefetch_read(&offset[i]);
    prefetch_read(&caplen[i]);
    prefetch_read(&wire_len[i]);
  }
  void prefetch_bytes(size_t i) const { prefetch_read(bytes.data() + offset[i]); }
  const uint8_t* frame(size_t i) const { return bytes.data() + offset[i]; }
  void add(const uint8_t* data, uint32_t cap, uint32_t wire, uint64_t ts);
  uint64_t total_caplen() const;
  // Frames which[0], which[1], ... back to back in a store of their own: a receive queue's share
  // laid out in the order it is served, so that replaying it reads memory in sequence.
  PacketStore select(const std::vector<uint32_t>& which) const;
};

}  // namespace tandem
