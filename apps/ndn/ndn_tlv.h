// NDN packet format v0.3 (named-data.net/doc/NDN-packet-spec/0.3): parsing an Interest's TLV
// structure down to its name components, written once as `__host__ __device__` code so that the
// CPU paths and a GPU kernel validate packets the same way. No allocation; every read is bounds
// checked against the enclosing TLV, so malformed input ends in a status, never past the buffer.
//
//   Interest = 0x05 TLV-LENGTH Name [CanBePrefix] [MustBeFresh] ... (other elements)
//   Name     = 0x07 TLV-LENGTH *NameComponent
//   NameComponent = TLV-TYPE (1..65535; 8 = generic) TLV-LENGTH *OCTET
// TLV-TYPE and TLV-LENGTH are VAR-NUMBERs: one octet < 253, or 253/254/255 followed by a 2/4/8-octet
// big-endian number. Non-minimal encodings are accepted (the spec allows it); TLV-TYPE 0 and
// lengths past the enclosing element are not.
#pragma once

#include <cstdint>

#include "core/compiler.h"

namespace tandem::ndn {

inline constexpr uint32_t kTlvInterest = 0x05;
inline constexpr uint32_t kTlvName = 0x07;
inline constexpr uint32_t kTlvGenericComponent = 0x08;
inline constexpr uint16_t kNdnUdpPort = 6363;
// Components recorded per name; a name with more is rejected (kTooManyComponents). URL-derived
// names in the real data have at most 22.
inline constexpr int kMaxComponents = 32;

enum class NdnStatus : uint8_t {
  kOk = 0,
  kTruncated,          // a TLV-TYPE, TLV-LENGTH or value runs past the end of the packet
  kBadLength,          // an element's length runs past its parent, or bytes follow the Interest
  kBadType,            // TLV-TYPE 0, or a name component type over 65535
  kNotInterest,        // a well-formed TLV that is not an Interest
  kNoName,             // the Interest's first element is not a Name
  kTooManyComponents,  // more than kMaxComponents name components
};

// Offsets are from the start of the parsed buffer; lengths are the components' value lengths.
struct NdnName {
  uint32_t name_offset = 0;  // the Name TLV's value
  uint32_t name_length = 0;
  int count = 0;
  uint32_t offset[kMaxComponents];
  uint32_t length[kMaxComponents];
  uint16_t type[kMaxComponents];
};

// Reads a VAR-NUMBER at p[*pos], p[..end). False if it runs past end.
TANDEM_HD_INLINE bool ndn_read_var(const uint8_t* p, uint32_t end, uint32_t* pos, uint64_t* out) {
  if (*pos >= end) return false;
  const uint8_t first = p[*pos];
  *pos += 1;
  int extra = first < 253 ? 0 : first == 253 ? 2 : first == 254 ? 4 : 8;
  if (extra == 0) {
    *out = first;
    return true;
  }
  if (end - *pos < static_cast<uint32_t>(extra)) return false;
  uint64_t v = 0;
  for (int i = 0; i < extra; ++i) v = (v << 8) | p[*pos + i];
  *pos += static_cast<uint32_t>(extra);
  *out = v;
  return true;
}

// Reads one TLV header at *pos inside [.., end): its type, and the bounds of its value. Advances
// *pos past the whole element.
TANDEM_HD_INLINE NdnStatus ndn_read_tlv(const uint8_t* p, uint32_t end, uint32_t* pos, uint64_t* type,
                                        uint32_t* value_begin, uint32_t* value_end) {
  uint64_t len = 0;
  if (!ndn_read_var(p, end, pos, type) || !ndn_read_var(p, end, pos, &len)) return NdnStatus::kTruncated;
  if (*type == 0) return NdnStatus::kBadType;
  if (len > end - *pos) return NdnStatus::kTruncated;
  *value_begin = *pos;
  *value_end = *pos + static_cast<uint32_t>(len);
  *pos = *value_end;
  return NdnStatus::kOk;
}

// Parses an Interest that fills exactly n bytes (a UDP payload) and records its name components.
TANDEM_HD_INLINE NdnStatus ndn_parse_interest(const uint8_t* p, uint32_t n, NdnName* name) {
  uint32_t pos = 0, ib = 0, ie = 0;
  uint64_t type = 0;
  NdnStatus st = ndn_read_tlv(p, n, &pos, &type, &ib, &ie);
  if (st != NdnStatus::kOk) return st;
  if (type != kTlvInterest) return NdnStatus::kNotInterest;
  if (ie != n) return NdnStatus::kBadLength;  // bytes after the Interest
  // The Name comes first.
  uint32_t q = ib, nb = 0, ne = 0;
  st = ndn_read_tlv(p, ie, &q, &type, &nb, &ne);
  if (st != NdnStatus::kOk) return st == NdnStatus::kTruncated && ie < n ? NdnStatus::kBadLength : st;
  if (type != kTlvName) return NdnStatus::kNoName;
  name->name_offset = nb;
  name->name_length = ne - nb;
  name->count = 0;
  for (uint32_t c = nb; c < ne;) {
    uint32_t vb = 0, ve = 0;
    st = ndn_read_tlv(p, ne, &c, &type, &vb, &ve);
    if (st != NdnStatus::kOk) return st == NdnStatus::kTruncated ? NdnStatus::kBadLength : st;
    if (type > 0xFFFF) return NdnStatus::kBadType;
    if (name->count == kMaxComponents) return NdnStatus::kTooManyComponents;
    name->offset[name->count] = vb;
    name->length[name->count] = ve - vb;
    name->type[name->count] = static_cast<uint16_t>(type);
    ++name->count;
  }
  // The other elements must be well-formed TLVs that end exactly at the Interest's end.
  while (q < ie) {
    uint32_t vb = 0, ve = 0;
    st = ndn_read_tlv(p, ie, &q, &type, &vb, &ve);
    if (st != NdnStatus::kOk) return st == NdnStatus::kTruncated ? NdnStatus::kBadLength : st;
  }
  return NdnStatus::kOk;
}

const char* ndn_status_name(NdnStatus s);

}  // namespace tandem::ndn
