#include "core/drop_reason.h"

namespace tandem {

const char* drop_reason_name(DropReason r) {
  switch (r) {
    case DropReason::kNone: return "none";
    case DropReason::kTruncated: return "truncated";
    case DropReason::kNotIp: return "not_ip";
    case DropReason::kBadVersion: return "bad_ip_version";
    case DropReason::kBadIhl: return "bad_ihl";
    case DropReason::kBadTotalLength: return "bad_total_length";
    case DropReason::kBadChecksum: return "bad_checksum";
    case DropReason::kTtlExceeded: return "ttl_exceeded";
    case DropReason::kBadL4: return "bad_l4_header";
    case DropReason::kNoRoute: return "no_route";
    case DropReason::kNotHandled: return "not_handled_by_app";
    case DropReason::kMartian: return "martian_address";
    case DropReason::kBadNdnTlv: return "bad_ndn_tlv";
    case DropReason::kNdnNotInterest: return "ndn_not_interest";
    case DropReason::kNdnNameTooLong: return "ndn_name_too_long";
    case DropReason::kNoPayload: return "no_payload";
    case DropReason::kAclDenied: return "acl_denied";
    case DropReason::kBadIpOptions: return "bad_ip_options";
    case DropReason::kIpv6Rh0: return "ipv6_rh0";
    case DropReason::kTinyFragment: return "tiny_fragment";
    case DropReason::kFragmentOverlap: return "fragment_overlap";
    case DropReason::kOversize: return "oversize";
    case DropReason::kCount: break;
  }
  return "unknown";
}

}  // namespace tandem
