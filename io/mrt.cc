#include "io/mrt.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "core/byte_order.h"

namespace tandem::mrt {

namespace {

constexpr uint16_t kTableDump = 12;
constexpr uint16_t kTableDumpV2 = 13;
// TABLE_DUMP subtypes: the AFI.
constexpr uint16_t kAfiIpv4 = 1, kAfiIpv6 = 2;
// TABLE_DUMP_V2 subtypes.
constexpr uint16_t kPeerIndexTable = 1, kRibIpv4Unicast = 2, kRibIpv4Multicast = 3, kRibIpv6Unicast = 4,
                   kRibIpv6Multicast = 5, kRibIpv4UnicastAddPath = 8, kRibIpv4MulticastAddPath = 9,
                   kRibIpv6UnicastAddPath = 10, kRibIpv6MulticastAddPath = 11;
// BGP path attributes.
constexpr uint8_t kAttrExtendedLength = 0x10;
constexpr uint8_t kAttrNextHop = 3, kAttrMpReachNlri = 14;

// A bounds-checked reader over one record's body.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* take(size_t n, const char* what) {
    if (left() < n) throw MrtError(std::string("truncated ") + what + " (" + std::to_string(n) + " bytes needed, " +
                                   std::to_string(left()) + " left)");
    const uint8_t* q = p_;
    p_ += n;
    return q;
  }
  uint8_t u8(const char* what) { return *take(1, what); }
  uint16_t u16(const char* what) { return static_cast<uint16_t>(load_be16(take(2, what))); }
  uint32_t u32(const char* what) { return load_be32(take(4, what)); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Finds the next hop in a BGP attribute block. MP_REACH_NLRI comes in two forms: TABLE_DUMP_V2's
// holds only the next hop's length and address (RFC 6396 sec. 4.3.4); the full form (TABLE_DUMP)
// starts with the AFI, whose first byte is 0, which a next hop length never is.
void read_next_hop(const uint8_t* attrs, size_t n, RibRoute& r) {
  Cursor c(attrs, n);
  bool have_v4 = false, have_mp = false;
  uint8_t v4[4] = {};
  while (c.left() > 0) {
    const uint8_t flags = c.u8("attribute flags");
    const uint8_t type = c.u8("attribute type");
    const size_t len = (flags & kAttrExtendedLength) ? c.u16("attribute length") : c.u8("attribute length");
    const uint8_t* v = c.take(len, "attribute value");
    if (type == kAttrNextHop) {
      if (len != 4) throw MrtError("NEXT_HOP attribute of length " + std::to_string(len) + " (expected 4)");
      std::memcpy(v4, v, 4);
      have_v4 = true;
    } else if (type == kAttrMpReachNlri && !have_mp) {
      Cursor m(v, len);
      if (len >= 1 && v[0] == 0) m.take(3, "MP_REACH_NLRI AFI/SAFI");  // the full form
      const uint8_t nh_len = m.u8("MP_REACH_NLRI next hop length");
      const uint8_t* nh = m.take(nh_len, "MP_REACH_NLRI next hop");
      if (nh_len == 16 || nh_len == 32) {  // global address, optionally followed by a link-local one
        std::memcpy(r.next_hop, nh, 16);
        r.next_hop_family = 6;
        have_mp = true;
      } else if (nh_len == 4) {
        std::memcpy(r.next_hop, nh, 4);
        r.next_hop_family = 4;
        have_mp = true;
      } else {
        throw MrtError("MP_REACH_NLRI next hop of length " + std::to_string(nh_len) + " (expected 4, 16 or 32)");
      }
    }
  }
  // An IPv6 route takes its next hop from MP_REACH_NLRI; an IPv4 route from NEXT_HOP, else MP_REACH.
  if (r.family == 4 && have_v4) {
    std::memset(r.next_hop, 0, 16);
    std::memcpy(r.next_hop, v4, 4);
    r.next_hop_family = 4;
    r.has_next_hop = true;
  } else if (have_mp) {
    r.has_next_hop = true;
  } else if (have_v4) {
    std::memset(r.next_hop, 0, 16);
    std::memcpy(r.next_hop, v4, 4);
    r.next_hop_family = 4;
    r.has_next_hop = true;
  }
}

void read_prefix(Cursor& c, int family, RibRoute& r) {
  r.family = family;
  r.len = c.u8("prefix length");
  const unsigned max = family == 4 ? 32 : 128;
  if (r.len > max) throw MrtError("prefix length " + std::to_string(r.len) + " over " + std::to_string(max));
  const size_t bytes = (r.len + 7u) / 8u;
  std::memset(r.prefix, 0, sizeof r.prefix);
  std::memcpy(r.prefix, c.take(bytes, "prefix"), bytes);
}

void deliver(RibRoute& r, const RouteSink& sink, MrtStats& stats) {
  ++stats.entries;
  if (!r.has_next_hop) ++stats.no_next_hop;
  sink(r);
}

}  // namespace

void parse_record(const uint8_t* header, const uint8_t* body, size_t length, const RouteSink& sink,
                  MrtStats& stats) {
  const uint16_t type = load_be16(header + 4);
  const uint16_t subtype = load_be16(header + 6);
  ++stats.records;
  Cursor c(body, length);
  if (type == kTableDump) {
    if (subtype != kAfiIpv4 && subtype != kAfiIpv6) throw MrtError("TABLE_DUMP with unknown AFI " + std::to_string(subtype));
    const int family = subtype == kAfiIpv4 ? 4 : 6;
    const size_t alen = family == 4 ? 4 : 16;
    ++stats.table_dump;
    c.take(4, "view and sequence numbers");
    RibRoute r;
    r.family = family;
    std::memcpy(r.prefix, c.take(alen, "prefix"), alen);
    r.len = c.u8("prefix length");
    if (r.len > alen * 8) throw MrtError("prefix length " + std::to_string(r.len) + " over " + std::to_string(alen * 8));
    c.take(1 + 4 + alen + 2, "status, time, peer address and AS");
    const uint16_t attr_len = c.u16("attribute length");
    const uint8_t* attrs = c.take(attr_len, "attributes");
    read_next_hop(attrs, attr_len, r);
    deliver(r, sink, stats);
    return;
  }
  if (type != kTableDumpV2) {
    ++stats.skipped_records;
    return;
  }
  if (subtype == kPeerIndexTable) {
    ++stats.peer_tables;  // peers are identified by index; their addresses are not needed here
    return;
  }
  int family = 0;
  bool add_path = false;
  switch (subtype) {
    case kRibIpv4Unicast: case kRibIpv4Multicast: family = 4; break;
    case kRibIpv6Unicast: case kRibIpv6Multicast: family = 6; break;
    case kRibIpv4UnicastAddPath: case kRibIpv4MulticastAddPath: family = 4; add_path = true; break;
    case kRibIpv6UnicastAddPath: case kRibIpv6MulticastAddPath: family = 6; add_path = true; break;
    default: ++stats.skipped_records; return;  // RIB_GENERIC and later subtypes
  }
  ++stats.rib_records;
  c.take(4, "sequence number");
  RibRoute r;
  read_prefix(c, family, r);
  const uint16_t entries = c.u16("entry count");
  for (uint32_t e = 0; e < entries; ++e) {
    c.take(2 + 4, "entry peer index and time");
    if (add_path) c.take(4, "path identifier");
    const uint16_t attr_len = c.u16("attribute length");
    const uint8_t* attrs = c.take(attr_len, "attributes");
    RibRoute x = r;
    x.entry = e;
    read_next_hop(attrs, attr_len, x);
    deliver(x, sink, stats);
  }
  if (c.left() != 0) throw MrtError(std::to_string(c.left()) + " bytes after the last RIB entry");
}

namespace {

[[noreturn]] void fail_at(const std::string& name, uint64_t record, uint64_t offset, const std::string& what) {
  throw MrtError(name + ": record " + std::to_string(record) + " at byte " + std::to_string(offset) + ": " + what);
}

// A record larger than this is taken as corruption rather than allocated.
constexpr uint32_t kMaxRecord = 64u << 20;
// A dump larger than this (decompressed) is refused, so that endless input (a pipe, a device)
// ends; today's full RIB dumps are a few GiB.
constexpr uint64_t kMaxDumpBytes = uint64_t{64} << 30;

}  // namespace

MrtStats read_file(const std::string& path, const RouteSink& sink) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw MrtError(path + ": cannot open: " + std::strerror(errno ? errno : ENOMEM));
  gzbuffer(f, 1 << 17);
  MrtStats stats;
  std::vector<uint8_t> body;
  uint64_t offset = 0;
  try {
    for (;;) {
      uint8_t header[12];
      const int got = gzread(f, header, sizeof header);
      if (got < 0) fail_at(path, stats.records + 1, offset, std::string("read error: ") + gzerror(f, nullptr));
      if (got == 0) {
        int err = Z_OK;
        gzerror(f, &err);
        if (err == Z_BUF_ERROR) fail_at(path, stats.records + 1, offset, "truncated input (the compressed stream ends early)");
        break;
      }
      if (offset > kMaxDumpBytes) fail_at(path, stats.records + 1, offset, "input larger than " + std::to_string(kMaxDumpBytes) + " bytes");
      if (got != static_cast<int>(sizeof header)) fail_at(path, stats.records + 1, offset, "truncated record header");
      const uint32_t length = load_be32(header + 8);
      if (length > kMaxRecord) fail_at(path, stats.records + 1, offset, "record length " + std::to_string(length) + " is implausible");
      body.resize(length);
      const int n = length ? gzread(f, body.data(), length) : 0;
      if (n < 0) fail_at(path, stats.records + 1, offset, std::string("read error: ") + gzerror(f, nullptr));
      if (static_cast<uint32_t>(n) != length) {
        fail_at(path, stats.records + 1, offset, "truncated record (" + std::to_string(n) + " of " + std::to_string(length) + " bytes)");
      }
      try {
        parse_record(header, body.data(), length, sink, stats);
      } catch (const MrtError& e) {
        fail_at(path, stats.records, offset, e.what());
      }
      offset += sizeof header + length;
    }
  } catch (...) {
    gzclose(f);
    throw;
  }
  gzclose(f);
  stats.bytes = offset;
  return stats;
}

MrtStats read_buffer(const uint8_t* data, size_t size, const RouteSink& sink, const std::string& name) {
  MrtStats stats;
  size_t offset = 0;
  while (offset < size) {
    if (size - offset < 12) fail_at(name, stats.records + 1, offset, "truncated record header");
    const uint8_t* header = data + offset;
    const uint32_t length = load_be32(header + 8);
    if (length > size - offset - 12) fail_at(name, stats.records + 1, offset, "truncated record");
    try {
      parse_record(header, header + 12, length, sink, stats);
    } catch (const MrtError& e) {
      fail_at(name, stats.records, offset, e.what());
    }
    offset += 12 + length;
  }
  stats.bytes = offset;
  return stats;
}

uint32_t NextHopPorts::port_of(const RibRoute& r) {
  std::string key(reinterpret_cast<const char*>(r.next_hop), r.next_hop_family == 4 ? 4 : 16);
  key.push_back(static_cast<char>(r.next_hop_family));
  return ports_.emplace(std::move(key), static_cast<uint32_t>(ports_.size())).first->second;
}

FirstRouteStats read_first_routes(const std::string& path, int family, const std::function<void(const FirstRoute&)>& sink) {
  FirstRouteStats st;
  NextHopPorts ports;
  std::unordered_set<std::string> seen;  // masked prefix bytes + length
  const size_t bytes = family == 4 ? 4 : 16;
  st.records = read_file(path, [&](const RibRoute& r) {
    if (r.family != family) {
      if (r.entry == 0) ++st.other_family;
      return;
    }
    FirstRoute f;
    f.len = r.len;
    for (size_t i = 0; i < bytes; ++i) {
      const unsigned keep = r.len >= 8 * (i + 1) ? 8 : r.len > 8 * i ? r.len - 8 * i : 0;
      f.prefix[i] = static_cast<uint8_t>(r.prefix[i] & (keep ? 0xFFu << (8 - keep) : 0u));
      f.host_bits_cleared |= f.prefix[i] != r.prefix[i];
    }
    std::string key(reinterpret_cast<const char*>(f.prefix), bytes);
    key.push_back(static_cast<char>(f.len));
    if (!seen.insert(std::move(key)).second) {
      ++st.other_paths;
      return;
    }
    f.has_next_hop = r.has_next_hop;
    if (r.has_next_hop) f.port = ports.port_of(r);
    sink(f);
  }).records;
  st.next_hop_addresses = static_cast<uint32_t>(ports.size());
  return st;
}

bool looks_like_mrt(const std::string& path) {
  auto ends_with = [&](const char* s) {
    const size_t n = std::strlen(s);
    return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
  };
  if (ends_with(".mrt") || ends_with(".mrt.gz")) return true;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return false;
  uint8_t h[12];
  const int n = gzread(f, h, sizeof h);
  gzclose(f);
  if (n != static_cast<int>(sizeof h)) return false;
  const uint16_t type = load_be16(h + 4);
  // A text table starts with printable characters; an MRT header's type field is 0x000c or 0x000d.
  return (type == kTableDump || type == kTableDumpV2) && h[4] == 0;
}

}  // namespace tandem::mrt
