// Loading IPv4 forwarding tables from text files (the control plane's input).
//
// MRT RIB dumps (RFC 6396 TABLE_DUMP / TABLE_DUMP_V2, .mrt or .mrt.gz, or any file that starts with
// an MRT header) are read too: each prefix's first RIB entry gives the route, its NEXT_HOP the
// next hop, numbered in order of appearance (Fib::next_hop_addresses); see io/mrt.h.
//
// Text format, one route per line, whitespace-separated:
//     PREFIX/LEN [NEXTHOP]      e.g. "1.0.4.0/22" or "1.0.4.0/22 7"
// '#' starts a comment; blank lines are ignored; files ending in .gz are decompressed (zlib reads
// plain files too). IPv6 prefixes (anything with ':') are skipped and counted, so one file can
// hold both families. Host bits below LEN are cleared (and counted). A later line for the same
// prefix replaces the earlier one (counted as a duplicate).
//
// NEXTHOP is an integer 0..16777214 (a port / next-hop id; 16777215 is the flood marker). Without it, the next hop is derived
// from the prefix so that real tables without next hops (BGP dumps) still spread traffic over
// ports deterministically:
//     next_hop = mix64(network_address * 64 + LEN) mod ports
// with mix64 the 64-bit finalizer in core/flow_hash.h, network_address the host-order integer of
// the masked prefix, and ports = FibLoadOptions::derive_ports (default 16).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/table_reader.h"

namespace tandem::ipv4 {

// A malformed table. The message is "FILE:LINE: what is wrong: `the line`".
class FibError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Route {
  uint32_t prefix;  // host byte order, host bits cleared
  uint8_t len;      // 0..32
  uint32_t next_hop;
};

// Both families' loaders take it (ipv6::Fib6LoadOptions is this type).
struct FibLoadOptions {
  uint32_t derive_ports = 16;  // ports for derived next hops (lines without a NEXTHOP column)
};

// What loading a table counted, for either family (Fib here, ipv6::Fib6).
struct FibLoadStats {
  std::string path;
  uint64_t lines = 0;
  uint64_t host_bits_cleared = 0;
  DuplicateKeys duplicates;
  uint64_t derived_next_hops = 0;  // routes whose next hop came from the derivation rule
  uint32_t max_next_hop = 0;
  // MRT input (io/mrt.h): records read; RIB entries of a prefix after its first (other peers'
  // paths, not used: the first entry's next hop is the route's); distinct next-hop addresses,
  // numbered 0, 1, ... in order of appearance to become the routes' next hops (ports).
  uint64_t mrt_records = 0;
  uint64_t other_paths = 0;
  uint32_t next_hop_addresses = 0;
};

struct Fib : FibLoadStats {
  std::vector<Route> routes;  // in file order, duplicates already resolved (last wins)
  uint64_t ipv6_skipped = 0;
};

// Loads a table. Throws FibError naming the file and line for any malformed line, and for files
// that cannot be opened or decompressed.
Fib load_fib(const std::string& path, const FibLoadOptions& opts = {});

// Parses one "a.b.c.d/len" token. Returns false (and an explanation in *why) when malformed.
bool parse_ipv4_prefix(const char* begin, const char* end, uint32_t* addr, uint8_t* len,
                       std::string* why);
// Parses a dotted-quad address, strictly (four decimal octets 0..255, no leading '+', no spaces).
bool parse_ipv4_addr(const char* begin, const char* end, uint32_t* addr);
std::string format_ipv4(uint32_t addr);

uint32_t derived_next_hop(uint32_t prefix, uint8_t len, uint32_t ports);

}  // namespace tandem::ipv4
