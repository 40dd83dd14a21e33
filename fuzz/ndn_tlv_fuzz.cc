// libFuzzer target for the NDN Interest parser (apps/ndn/ndn_tlv.h) and the FIB's name lookup
// (apps/ndn/ndn_fib_core.h): any byte string is parsed or rejected with a status; on success every
// recorded component must lie inside the Name, and the Name inside the packet, and the lookup of
// the parsed name must equal the lookup of its Name bytes. Any byte string is also looked up as a
// Name value (malformed component TLVs end in "no route", never a read past the input).
// apps/ndn/ndn_tlv_test.cc checks the parser on mutated packets.
#include <cstdint>
#include <cstdlib>

#include "apps/ndn/ndn_fib.h"
#include "apps/ndn/ndn_tlv.h"

namespace {

const tandem::ndn::NdnFib& fib() {
  static const tandem::ndn::NdnFib* f = [] {
    auto* t = new tandem::ndn::NdnFib(64);
    t->add({"com", "example"}, 1);
    t->add({"com"}, 2);
    t->add({"a", "", "b"}, 3);
    t->add({std::string(300, 'x')}, 4);
    return t;
  }();
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > UINT32_MAX) return 0;
  const uint32_t any = fib().lookup_name(data, static_cast<uint32_t>(size));
  if (any != tandem::ndn::kNoRoute && (any < 1 || any > 4)) std::abort();
  tandem::ndn::NdnName n;
  if (tandem::ndn::ndn_parse_interest(data, static_cast<uint32_t>(size), &n) != tandem::ndn::NdnStatus::kOk) return 0;
  if (n.count < 0 || n.count > tandem::ndn::kMaxComponents) std::abort();
  if (uint64_t{n.name_offset} + n.name_length > size) std::abort();
  for (int i = 0; i < n.count; ++i) {
    if (n.offset[i] < n.name_offset || uint64_t{n.offset[i]} + n.length[i] > uint64_t{n.name_offset} + n.name_length) {
      std::abort();
    }
  }
  if (fib().lookup(data, n) != fib().lookup_name(data + n.name_offset, n.name_length)) std::abort();
  return 0;
}
