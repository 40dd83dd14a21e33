// Reading BGP RIB dumps in MRT format (RFC 6396), plain or gzip-compressed: TABLE_DUMP (type 12,
// IPv4 and IPv6 subtypes) and TABLE_DUMP_V2 (type 13: PEER_INDEX_TABLE, RIB_IPV4/IPV6_UNICAST and
// _MULTICAST, and their RFC 8050 ADD-PATH variants). Each RIB entry yields one route: its prefix,
// the peer it came from and its next hop, from the NEXT_HOP attribute (IPv4) or MP_REACH_NLRI
// (IPv6; abbreviated to length + address in TABLE_DUMP_V2, RFC 6396 sec. 4.3.4, full in TABLE_DUMP).
// Other record types (BGP4MP updates, OSPF, ...) are skipped and counted.
//
// Every malformed record is an error naming the file, the record number and its byte offset
// (MrtError); a file that ends inside a record is reported as truncated. The record parser works on
// a byte buffer, so the fuzz target (fuzz/mrt_fuzz.cc) exercises exactly what files go through.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace tandem::mrt {

class MrtError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RibRoute {
  int family = 4;           // 4 or 6
  uint8_t prefix[16] = {};  // network byte order (IPv4 in the first 4 bytes), host bits as stored
  uint8_t len = 0;          // prefix length
  bool has_next_hop = false;
  int next_hop_family = 4;  // an IPv6 route may still carry an IPv4 next hop (and the other way)
  uint8_t next_hop[16] = {};
  uint32_t entry = 0;       // the entry's position among its prefix's entries (0 = first peer)
};

struct MrtStats {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t table_dump = 0;     // TABLE_DUMP records (one entry each)
  uint64_t rib_records = 0;    // TABLE_DUMP_V2 RIB records (one prefix, several entries)
  uint64_t peer_tables = 0;    // PEER_INDEX_TABLE records
  uint64_t entries = 0;        // RIB entries seen (routes passed to the callback)
  uint64_t skipped_records = 0;  // other types or subtypes (counted, not parsed)
  uint64_t no_next_hop = 0;    // entries without a NEXT_HOP / MP_REACH_NLRI next hop
};

using RouteSink = std::function<void(const RibRoute&)>;

// Parses one record: `header` is its 12-byte MRT header, `body` its `length` bytes. Calls `sink`
// for every RIB entry. Throws MrtError("what") (without file or offset) on a malformed record.
void parse_record(const uint8_t* header, const uint8_t* body, size_t length, const RouteSink& sink,
                  MrtStats& stats);

// Reads a whole file record by record. Throws MrtError("PATH: record N at byte OFFSET: what").
MrtStats read_file(const std::string& path, const RouteSink& sink);

// Reads an in-memory dump the same way (the fuzz target); `name` labels errors.
MrtStats read_buffer(const uint8_t* data, size_t size, const RouteSink& sink, const std::string& name = "<buffer>");

// Next-hop addresses to port numbers: 0, 1, 2, ... in order of first appearance, so a dump's
// distinct next hops become a router's ports deterministically.
class NextHopPorts {
 public:
  uint32_t port_of(const RibRoute& r);  // r.has_next_hop must be true
  size_t size() const { return ports_.size(); }

 private:
  std::unordered_map<std::string, uint32_t> ports_;
};

// A FIB's view of a dump: for one address family, each prefix's first RIB entry (a dump holds one
// path per peer; the first peer's is taken as the route), host bits cleared, its next-hop address
// numbered as a port (NextHopPorts), the other entries and the other family counted.
struct FirstRoute {
  uint8_t prefix[16] = {};  // network byte order, host bits cleared
  uint8_t len = 0;
  bool host_bits_cleared = false;
  bool has_next_hop = false;
  uint32_t port = 0;        // with has_next_hop
};
struct FirstRouteStats {
  uint64_t records = 0;
  uint64_t other_paths = 0;         // later entries of a prefix already taken
  uint64_t other_family = 0;        // prefixes (first entries) of the other family
  uint32_t next_hop_addresses = 0;  // distinct next hops = ports used
};
FirstRouteStats read_first_routes(const std::string& path, int family, const std::function<void(const FirstRoute&)>& sink);

// True if `path` looks like an MRT dump: its name ends in .mrt or .mrt.gz, or its first
// (decompressed) bytes are an MRT header of a RIB dump type (12 or 13) rather than text.
bool looks_like_mrt(const std::string& path);

}  // namespace tandem::mrt
