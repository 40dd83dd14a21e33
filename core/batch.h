// A batch (VPP's vector) of packets: cell indices into a PacketPool plus structure-of-arrays
// metadata, so that each stage walks dense arrays. Capacity is fixed: nothing allocates per batch.
#pragma once

#include <array>
#include <cstdint>

#include "core/compiler.h"
#include "core/drop_reason.h"

namespace tandem {

// A packet's verdict: the output port, or a drop with its reason. Ports use the low 24 bits.
// Host and device code (the GPU forwarding kernel) encode verdicts alike.
struct Verdict {
  static constexpr uint32_t kDropFlag = 0x80000000u;
  // Not yet decided. It has the drop flag set on purpose: a packet nobody decided is never sent.
  static constexpr uint32_t kUnset = 0xFFFFFFFFu;
  // The port of a frame sent out of every port but the one it came in on (the L2 switch's flood).
  static constexpr uint32_t kFloodPort = 0x00FFFFFFu;
  // The largest port a table may name: the one above it is the flood marker, so a route to it
  // would be counted as flooded. Table loaders refuse it.
  static constexpr uint32_t kMaxPort = kFloodPort - 1;
  TANDEM_HD static constexpr uint32_t port(uint32_t p) { return p & 0x00FFFFFFu; }
  TANDEM_HD static constexpr uint32_t drop(DropReason r) {
    return kDropFlag | static_cast<uint32_t>(r);
  }
  TANDEM_HD static constexpr bool is_drop(uint32_t v) { return (v & kDropFlag) != 0; }
  TANDEM_HD static constexpr DropReason reason(uint32_t v) {
    return static_cast<DropReason>(v & 0xFF);
  }
};

struct PacketBatch {
  static constexpr uint32_t kCapacity = 256;

  uint32_t size = 0;
  std::array<uint32_t, kCapacity> cell;       // index into the PacketPool
  std::array<uint16_t, kCapacity> len;        // captured frame length in bytes
  std::array<uint32_t, kCapacity> wire_len;   // original length on the wire (pcap's len)
  std::array<uint64_t, kCapacity> ts_ns;      // receive timestamp, ns since the epoch
  std::array<uint16_t, kCapacity> l3_off;     // set by the parse stage
  std::array<uint32_t, kCapacity> verdict;    // Verdict encoding; kUnset until decided

  void clear() { size = 0; }
  bool full() const { return size == kCapacity; }
};

}  // namespace tandem
