// Per-worker packet accounting. Each worker owns one (cache-line aligned, so workers never share a
// line); totals are summed on demand. The invariant every run checks:
//     received == forwarded + dropped
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/batch.h"
#include "core/compiler.h"
#include "core/drop_reason.h"

namespace tandem {

struct alignas(kCacheLine) Counters {
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;  // captured frame bytes
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;
  std::array<uint64_t, kDropReasonCount> drops{};
  uint64_t tx_flooded = 0;  // of tx_packets: sent out of every port (Verdict::kFloodPort)
  std::vector<uint64_t> tx_per_port;  // sized by the app (number of next hops / ports)

  explicit Counters(size_t ports = 0) : tx_per_port(ports, 0) {}

  void drop(DropReason r) { ++drops[static_cast<int>(r)]; }
  void received(uint32_t len) {
    ++rx_packets;
    rx_bytes += len;
  }
  // A packet of `len` bytes left with verdict `v` (core/batch.h): forwarded to its port (or
  // flooded), or dropped for its reason.
  void verdict(uint32_t v, uint32_t len) {
    if (Verdict::is_drop(v)) {
      drop(Verdict::reason(v));
      return;
    }
    ++tx_packets;
    tx_bytes += len;
    if (uint64_t* c = port_count(v)) ++*c;
  }
  // Where a forwarded verdict `v` is counted besides tx_packets: the flood count, its port's count,
  // or nowhere for a port the app did not size.
  uint64_t* port_count(uint32_t v) {
    const uint32_t port = Verdict::port(v);
    if (port == Verdict::kFloodPort) return &tx_flooded;
    return port < tx_per_port.size() ? &tx_per_port[port] : nullptr;
  }
  // Every frame of a burst whose verdicts are final: received, then forwarded or dropped. One pass
  // after the app's stages, rather than a count inside each, keeps the per-port vector out of them.
  // The sums run in locals, so port_count() is spelled out here: a store through the per-port vector
  // may alias the members, so summing into them would load and store each one per frame.
  void count(const PacketBatch& b) {
    uint64_t rx_b = 0, tx_p = 0, tx_b = 0, flooded = 0;
    uint64_t* const per_port = tx_per_port.data();
    const size_t ports = tx_per_port.size();
    for (uint32_t i = 0; i < b.size; ++i) {
      const uint32_t v = b.verdict[i];
      const uint32_t len = b.len[i];
      rx_b += len;
      if (Verdict::is_drop(v)) {
        drop(Verdict::reason(v));
        continue;
      }
      ++tx_p;
      tx_b += len;
      const uint32_t port = Verdict::port(v);
      if (port == Verdict::kFloodPort) {
        ++flooded;
      } else if (port < ports) {
        ++per_port[port];
      }
    }
    rx_packets += b.size;
    rx_bytes += rx_b;
    tx_packets += tx_p;
    tx_bytes += tx_b;
    tx_flooded += flooded;
  }
  // A frame counted as forwarded with verdict `v` that the output could not send after all: it
  // becomes a drop for kTxError.
  void tx_failed(uint32_t v, uint32_t len) {
    --tx_packets;
    tx_bytes -= len;
    if (uint64_t* c = port_count(v)) --*c;
    drop(DropReason::kTxError);
  }
  uint64_t dropped() const {
    uint64_t s = 0;
    for (uint64_t d : drops) s += d;
    return s;
  }
  bool balanced() const { return rx_packets == tx_packets + dropped(); }

  void merge(const Counters& o) {
    rx_packets += o.rx_packets;
    rx_bytes += o.rx_bytes;
    tx_packets += o.tx_packets;
    tx_bytes += o.tx_bytes;
    tx_flooded += o.tx_flooded;
    for (int i = 0; i < kDropReasonCount; ++i) drops[i] += o.drops[i];
    if (tx_per_port.size() < o.tx_per_port.size()) tx_per_port.resize(o.tx_per_port.size(), 0);
    for (size_t i = 0; i < o.tx_per_port.size(); ++i) tx_per_port[i] += o.tx_per_port[i];
  }
};

}  // namespace tandem
