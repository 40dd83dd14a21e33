#include "gpu/offload.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace tandem::gpu {

const char* gpu_mode_name(GpuMode m) {
  switch (m) {
    case GpuMode::kAsync: return "async";
    case GpuMode::kGraph: return "graph";
    case GpuMode::kMapped: return "mapped";
    case GpuMode::kPersistent: return "persistent";
  }
  return "unknown";
}

GpuMode parse_gpu_mode(const std::string& s) {
  for (GpuMode m : {GpuMode::kAsync, GpuMode::kGraph, GpuMode::kMapped, GpuMode::kPersistent}) {
    if (s == gpu_mode_name(m)) return m;
  }
  throw std::invalid_argument("unknown GPU mode '" + s + "' (async, graph, mapped, persistent)");
}

void run_all(OffloadRunner& r, const void* in, void* out, size_t n) {
  const size_t cap = r.capacity(), ib = r.in_item_bytes(), ob = r.out_item_bytes();
  const int slots = std::max(1, r.slots());
  std::vector<size_t> pending_off(static_cast<size_t>(slots)), pending_len(static_cast<size_t>(slots), 0);
  auto finish = [&](int s) {
    if (!pending_len[s]) return;
    r.wait(s);
    std::memcpy(static_cast<uint8_t*>(out) + pending_off[s] * ob, r.out(s), pending_len[s] * ob);
    pending_len[s] = 0;
  };
  size_t batch = 0;
  for (size_t off = 0; off < n; off += cap, ++batch) {
    const int s = static_cast<int>(batch % static_cast<size_t>(slots));
    finish(s);  // the slot's previous batch, before its buffers are reused
    const size_t len = std::min(cap, n - off);
    std::memcpy(r.in(s), static_cast<const uint8_t*>(in) + off * ib, len * ib);
    r.submit(s, len);
    pending_off[s] = off;
    pending_len[s] = len;
  }
  for (int s = 0; s < slots; ++s) finish(s);
}

}  // namespace tandem::gpu
