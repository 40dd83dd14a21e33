// Loading IPv6 forwarding tables from text files, and generating tables and addresses for tests
// and benches.
//
// Format, one route per line, whitespace-separated (the IPv4 loader's, apps/ipv4/fib_loader.h):
//     PREFIX/LEN [NEXTHOP]      e.g. "2001:db8::/32" or "2001:db8::/32 7"
// '#' starts a comment; blank lines are ignored; files ending in .gz are decompressed (zlib reads
// plain files too). PREFIX is parsed by inet_pton(AF_INET6), so any standard spelling is accepted
// and nothing else (no zone ids, no spaces); LEN is 0..128. IPv4 prefixes (no ':') are checked
// with the IPv4 loader's parser, then skipped and counted, so one file can hold both families.
// Host bits below LEN are cleared (and counted). A later line for the same prefix replaces the
// earlier one (counted as a duplicate).
//
// NEXTHOP is an integer 0..16777214 (16777215 is the flood marker). Without it, the next hop is derived from the prefix:
//     next_hop = mix64(mix64(high64 ^ LEN) ^ low64) mod ports
// with mix64 the finalizer in core/flow_hash.h, high64/low64 the big-endian halves of the masked
// prefix, and ports = Fib6LoadOptions::derive_ports (default 16).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/ipv4/fib_loader.h"
#include "apps/ipv6/lpm6.h"
#include "core/table_reader.h"

namespace tandem::ipv6 {

// A malformed table: "FILE:LINE: what is wrong: `the line`". An ipv4::FibError, so that code
// catching table errors catches both families.
class Fib6Error : public ipv4::FibError {
 public:
  using ipv4::FibError::FibError;
};

struct Route6 {
  Addr6 prefix;  // network byte order, host bits cleared
  uint8_t len;   // 0..128
  uint32_t next_hop;
};

using Fib6LoadOptions = ipv4::FibLoadOptions;

struct Fib6 : ipv4::FibLoadStats {
  std::vector<Route6> routes;  // in file order, duplicates already resolved (last wins)
  uint64_t ipv4_skipped = 0;
};

// Loads a table. Throws Fib6Error naming the file and line for any malformed line, and for files
// that cannot be opened or decompressed.
Fib6 load_fib6(const std::string& path, const Fib6LoadOptions& opts = {});

// Parses one "addr/len" token (host bits kept). Returns false (and why in *why) when malformed.
bool parse_ipv6_prefix(const char* begin, const char* end, Addr6* addr, uint8_t* len, std::string* why);
// Parses an address with inet_pton(AF_INET6).
bool parse_ipv6_addr(const char* begin, const char* end, Addr6* addr);
// The canonical text form (inet_ntop), e.g. "2001:db8::1".
std::string format_ipv6(const uint8_t addr[16]);

uint32_t derived_next_hop6(const uint8_t prefix[16], uint8_t len, uint32_t ports);

// n distinct random prefixes with lengths uniform in [min_len, max_len] and random bits (the G-Opt
// paper's IPv6 worst case is n = 200,000, lengths 48..64), derived next hops over 16 ports.
// Reproducible: the same arguments give the same table on every platform.
std::vector<Route6> random_table(size_t n, int min_len, int max_len, uint64_t seed);
// n addresses, each inside a prefix of `table` picked at random (random host bits).
std::vector<Addr6> sample_addresses(const std::vector<Route6>& table, size_t n, uint64_t seed);
// n addresses uniform over all 2^128.
std::vector<Addr6> uniform_addresses(size_t n, uint64_t seed);

}  // namespace tandem::ipv6
