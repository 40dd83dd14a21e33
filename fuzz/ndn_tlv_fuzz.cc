// libFuzzer target for the NDN Interest parser (apps/ndn/ndn_tlv.h): any byte string is parsed or
// rejected with a status; on success every recorded component must lie inside the Name, and the
// Name inside the packet. tests/ndn_tlv_test.cc checks the same on mutated packets.
#include <cstdint>
#include <cstdlib>

#include "apps/ndn/ndn_tlv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > UINT32_MAX) return 0;
  tandem::ndn::NdnName n;
  if (tandem::ndn::ndn_parse_interest(data, static_cast<uint32_t>(size), &n) != tandem::ndn::NdnStatus::kOk) return 0;
  if (n.count < 0 || n.count > tandem::ndn::kMaxComponents) std::abort();
  if (uint64_t{n.name_offset} + n.name_length > size) std::abort();
  for (int i = 0; i < n.count; ++i) {
    if (n.offset[i] < n.name_offset || uint64_t{n.offset[i]} + n.length[i] > uint64_t{n.name_offset} + n.name_length) {
      std::abort();
    }
  }
  return 0;
}
