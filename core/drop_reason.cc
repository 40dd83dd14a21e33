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
    case DropReason::kBadIpOptions: return "bad_ip_options";
    case DropReason::kIpv6Rh0: return "ipv6_rh0";
    case DropReason::kTinyFragment: return "tiny_fragment";
    case DropReason::kFragmentOverlap: return "fragment_overlap";
    case DropReason::kOversize: return "oversize";
    case DropReason::kGpuFault: return "gpu_fault";
    case DropReason::kTxError: return "tx_error";
    default: break;
  }
  static const char* const kAppNames[kAppDropReasons] = {
      "app_reason_0",  "app_reason_1",  "app_reason_2",  "app_reason_3",  "app_reason_4",  "app_reason_5",
      "app_reason_6",  "app_reason_7",  "app_reason_8",  "app_reason_9",  "app_reason_10", "app_reason_11",
      "app_reason_12", "app_reason_13", "app_reason_14", "app_reason_15"};
  if (is_app_drop_reason(r)) return kAppNames[static_cast<int>(r) - static_cast<int>(DropReason::kFirstApp)];
  return "unknown";
}

}  // namespace tandem
