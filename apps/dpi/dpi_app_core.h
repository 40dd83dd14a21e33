// The dpi app's per-packet pieces, written once for the host and the GPU: what a packet gives DPI
// (its transport payload, protocol and ports), the item path's data blocks, the verdict of a
// match, and the whole-frame core (apps/frame_core.h) over the flat program (dpi_program.h).
//
// Verdicts. A matched rule's action decides, the strongest first, as Suricata's default action
// order: pass (port 0, as if nothing matched), then drop (dropped, kDpiRuleDrop), then alert (port
// 1; with --on-match drop, dropped as kDpiRuleDrop: an IPS that blocks what it would alert on).
// Nothing matched: port 0. Frames that do not parse are dropped with the parser's reasons. An IP
// packet whose bytes DPI cannot see (a fragment after the first, whose bytes continue an earlier
// fragment's payload with nothing reassembling them; a malformed or cut transport header, a tiny
// first fragment among them) is dropped as kDpiNotInspected, or with --uninspected forward goes
// to port 2: never to port 0 as if it were clean, so no fragmenting gets a packet past a rule.
#pragma once

#include <cstdint>

#include "apps/dpi/dpi_program.h"
#include "core/batch.h"
#include "core/compiler.h"
#include "core/drop_reason.h"
#include "core/flow_hash.h"
#include "core/parse_impl.h"

namespace tandem::dpi {

inline constexpr DropReason kDpiRuleDrop = app_drop_reason(0);
inline constexpr DropReason kDpiNotInspected = app_drop_reason(1);

inline const char* dpi_drop_reason_name(DropReason r) {
  return r == kDpiRuleDrop ? "dpi_rule_drop" : r == kDpiNotInspected ? "dpi_not_inspected" : nullptr;
}

inline constexpr uint32_t kCleanPort = 0;
inline constexpr uint32_t kAlertPort = 1;
inline constexpr uint32_t kUninspectedPort = 2;
inline constexpr uint32_t kPorts = 3;

// A lookup's result: the matched rules' action bits (kAct*), or one of these marks.
inline constexpr uint32_t kResultUninspected = 0x40000000u;
inline constexpr uint32_t kResultOnWorker = 0x80000000u;  // the payload did not fit an item

struct DpiPolicy {
  uint8_t drop_alerts = 0;          // --on-match drop
  uint8_t forward_uninspected = 0;  // --uninspected forward
};

// What DPI reads of a packet, where it lies in the frame.
struct DpiKey {
  const uint8_t* payload;  // the transport payload (or, when it has none, the frame: any readable pointer)
  uint32_t len;
  uint8_t proto;
  uint8_t inspect;  // 0: bytes DPI cannot see (see above)
  uint16_t sport, dport;
};

// classify(): dropped when the frame does not parse; else the key, `inspect` 0 for a later
// fragment or a malformed transport header (dpi_match.h's PacketInfo::not_inspected).
TANDEM_HD_INLINE DropReason dpi_classify(const uint8_t* frame, uint32_t len, DpiKey* key, uint16_t* l3_off,
                                         uint32_t* flow) {
  ParsedPacket pp;
  const DropReason r = parse_frame(frame, len, &pp);
  if (r != DropReason::kNone) return r;
  constexpr uint8_t kLaterFragment = kFlagFragment | kFlagL4Missing;
  key->inspect = !((pp.flags & kFlagL4Malformed) || (pp.flags & kLaterFragment) == kLaterFragment);
  key->proto = pp.tuple.proto;
  key->sport = pp.tuple.src_port;
  key->dport = pp.tuple.dst_port;
  uint32_t off = 0, n = 0;
  if (key->inspect && transport_payload(frame, pp, &off, &n)) {
    key->payload = frame + off;
    key->len = n;
  } else {
    key->payload = frame;
    key->len = 0;
  }
  *l3_off = pp.l3_off;
  if (flow) *flow = flow_hash(pp.tuple);
  return DropReason::kNone;
}

TANDEM_HD_INLINE uint32_t dpi_verdict(uint32_t result, DpiPolicy pol) {
  if (result & kResultUninspected) {
    return pol.forward_uninspected ? Verdict::port(kUninspectedPort) : Verdict::drop(kDpiNotInspected);
  }
  if (result & kActPass) return Verdict::port(kCleanPort);
  if (result & kActDrop) return Verdict::drop(kDpiRuleDrop);
  if (result & kActAlert) return pol.drop_alerts ? Verdict::drop(kDpiRuleDrop) : Verdict::port(kAlertPort);
  return Verdict::port(kCleanPort);
}

// Both stages on the flat program, limits as DpiEngine's (dpi_match.h: kMaxTries, kMaxInspections).
inline constexpr int kFlatMaxTries = 64;
inline constexpr int kFlatMaxInspections = 3000;

TANDEM_HD_INLINE uint32_t dpi_flat_result(const DpiProgram& pr, const uint8_t* payload, uint32_t len, uint8_t proto,
                                          uint16_t sport, uint16_t dport) {
  auto none = [](uint32_t) {};
  return flat_match(pr, FlatPacket{payload, len, proto, sport, dport}, kFlatMaxTries, kFlatMaxInspections, none);
}

// ---- The item path: a payload and its header facts in, the result out ----

struct alignas(16) DpiItem {
  static constexpr uint32_t kBytes = 504;
  static constexpr uint16_t kTooLong = 0xFFFF;
  uint16_t len;  // payload bytes, or kTooLong (the worker matches it: kResultOnWorker)
  uint8_t proto;
  uint8_t inspect;
  uint16_t sport, dport;
  uint8_t bytes[kBytes];
};
static_assert(sizeof(DpiItem) == 512);

TANDEM_HD_INLINE void make_dpi_item(const DpiKey& k, DpiItem* it) {
  it->proto = k.proto;
  it->inspect = k.inspect;
  it->sport = k.sport;
  it->dport = k.dport;
  if (k.len > DpiItem::kBytes) {
    it->len = DpiItem::kTooLong;
    return;
  }
  it->len = static_cast<uint16_t>(k.len);
  for (uint32_t i = 0; i < k.len; ++i) it->bytes[i] = k.payload[i];
}

// What the GPU computes per item, and the engine's CPU fallback with it.
TANDEM_HD_INLINE uint32_t dpi_item_result(const DpiProgram& pr, const DpiItem& it) {
  if (!it.inspect) return kResultUninspected;
  if (it.len == DpiItem::kTooLong) return kResultOnWorker;
  return dpi_flat_result(pr, it.bytes, it.len, it.proto, it.sport, it.dport);
}

// ---- The whole-frame core (apps/frame_core.h) ----

struct DpiCore {
  using Key = DpiKey;
  using Result = uint32_t;

  DpiProgram program;
  DpiPolicy policy;

  TANDEM_HD_INLINE DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off,
                                       uint32_t* flow) const {
    return dpi_classify(frame, len, key, l3_off, flow);
  }
  TANDEM_HD_INLINE Result lookup(const Key& k) const {
    if (!k.inspect) return kResultUninspected;
    return dpi_flat_result(program, k.payload, k.len, k.proto, k.sport, k.dport);
  }
  TANDEM_HD_INLINE uint32_t apply(uint8_t*, uint32_t, uint16_t, Result r) const { return dpi_verdict(r, policy); }
  template <class F>
  void for_each_array(F&& f) {
    program.for_each_array(f);
  }
};

}  // namespace tandem::dpi
