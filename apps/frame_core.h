// An app's whole per-packet logic as one `__host__ __device__` implementation (a frame core): parse
// and validate, classify, look up, rewrite and decide, on one frame. The app's CPU paths are built
// from the same functions (apps/forward_app_impl.h), and a GPU kernel given whole frames
// (gpu/frame_runner.h) runs forward_frame() on its own copy of the core, so both paths drop the
// same frames for the same reasons and write the same bytes.
//
// A Core is a small copyable struct holding the app's table as plain arrays (host pointers, or
// device pointers in a GPU copy) with
//   using Key;      what classify finds in the frame and the lookup takes
//   using Result;   what the lookup gives
//   TANDEM_HD DropReason classify(const uint8_t* frame, uint32_t len, Key*, uint16_t* l3_off,
//                                 uint32_t* flow) const;       // kNone: go on to the lookup;
//                                                              // the flow's hash where flow is not null
//   TANDEM_HD Result lookup(const Key&) const;
//   TANDEM_HD uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, const Result&) const;
//                                                              // rewrites the frame, returns a Verdict
//   template <class F> void for_each_array(F&& f);
//       calls f(pointer&, element_count) for every table array the lookup reads, so that a device
//       copy can upload each one and repoint the core at it (gpu/frame_runner.cuh).
// Counting stays with the callers: device code has no counters to bump.
#pragma once

#include <cstdint>

#include "core/batch.h"
#include "core/compiler.h"
#include "core/drop_reason.h"

namespace tandem {

// One frame through the whole per-packet logic; returns its Verdict. A dropped frame is left as
// it was, unless the app's apply rewrote it before deciding to drop.
// With `l3_out`, the offset of the frame's L3 header that classify found goes there (what
// verification reads the key at; 0 for a frame dropped before the lookup).
template <class Core>
TANDEM_HD_INLINE uint32_t forward_frame(const Core& core, uint8_t* frame, uint32_t len, uint16_t* l3_out = nullptr) {
  typename Core::Key key{};
  uint16_t l3_off = 0;
  const DropReason r = core.classify(frame, len, &key, &l3_off, nullptr);
  if (l3_out) *l3_out = r == DropReason::kNone ? l3_off : 0;
  if (r != DropReason::kNone) return Verdict::drop(r);
  return core.apply(frame, len, l3_off, core.lookup(key));
}

}  // namespace tandem
