// Why a packet was not forwarded. Every packet leaves the data path with exactly one verdict: a port,
// or one of these reasons. Counters are indexed by this enum.
#pragma once

#include <cstdint>

namespace tandem {

enum class DropReason : uint8_t {
  kNone = 0,          // not dropped
  kTruncated,         // captured bytes shorter than the headers (or than IPv4 total length) need
  kNotIp,             // Ethernet type is neither IPv4 nor IPv6 (ARP, LLDP, ...)
  kBadVersion,        // IP version field does not match the Ethernet type
  kBadIhl,            // IPv4 IHL < 5 (an IHL beyond the capture is kTruncated)
  kBadTotalLength,    // IPv4 total length < IHL*4, or IPv6 payload length 0 (jumbogram)
  kBadChecksum,       // IPv4 header checksum wrong
  kTtlExceeded,       // IPv4 TTL (or IPv6 hop limit) <= 1: would expire at this hop
  kBadL4,             // malformed TCP/UDP/ICMP header (bad data offset, UDP length, ...)
  kNoRoute,           // the lookup found no route
  kNotHandled,        // a valid packet the app does not route (e.g. IPv6 in the IPv4 app)
  kMartian,           // source or destination the router must never forward (RFC 1812 5.3.7)
  kBadIpOptions,      // IPv4 option list malformed: a length below 2 or past the header (RFC 791)
  kIpv6Rh0,           // IPv6 type 0 routing header with segments left > 0 (deprecated, RFC 5095)
  kTinyFragment,      // filtering apps: a first fragment too short to hold its transport header (RFC 1858)
  kFragmentOverlap,   // filtering apps: a TCP fragment at offset 8 bytes, over the ports and flags (RFC 3128)
  kOversize,          // longer than 65,535 bytes, more than the data path's 16-bit frame length holds;
                      // from a live port, longer than the cells (a GRO or TSO aggregate)
  kGpuFault,          // the GPU failed while it was writing the frame's batch back: the frame may be
                      // half-rewritten, so it is not sent (the resident path; batches the GPU had not
                      // begun writing are redone on the CPU)
  kTxError,           // the output port refused the frame (larger than its MTU, the interface down)
  kCoreCount,
  // An app's own reasons (an NDN TLV error, a firewall's deny) are codes from kFirstApp on, declared
  // in the app's folder with app_drop_reason() and named by the app (ForwardApp::drop_reason_name):
  // a run has one app, so two apps may use the same code.
  kFirstApp = 48,
  kCount = 64
};

inline constexpr int kDropReasonCount = static_cast<int>(DropReason::kCount);
inline constexpr int kAppDropReasons = kDropReasonCount - static_cast<int>(DropReason::kFirstApp);

// The app's i-th own reason (0 <= i < kAppDropReasons).
constexpr DropReason app_drop_reason(int i) { return static_cast<DropReason>(static_cast<int>(DropReason::kFirstApp) + i); }
constexpr bool is_app_drop_reason(DropReason r) { return r >= DropReason::kFirstApp && r < DropReason::kCount; }

// Stable, lower-case names used in CLI output and JSON. An app's own reasons are "app_reason_N"
// here; the app names them (ForwardApp::drop_reason_name).
const char* drop_reason_name(DropReason r);

}  // namespace tandem
