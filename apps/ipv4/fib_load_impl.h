// The body both FIB loaders share (fib_loader.cc for IPv4, apps/ipv6/fib6_loader.cc for IPv6):
// an MRT dump's first route per prefix, or a text table line by line, with the same counting,
// host-bit clearing, next-hop derivation and last-line-wins duplicates. Only the address family's
// own steps differ; a family names them in a traits struct:
//
//   using Route = ...;   // { prefix, len, next_hop }
//   using Fib = ...;     // a FibLoadStats with `std::vector<Route> routes`
//   using Error = ...;   // what the loader throws (a FibError)
//   using Key = ...; using KeyHash = ...;   // a route's (prefix, len), and its hash
//   static constexpr int kMrtFamily;       // 4 or 6 (io/mrt.h)
//   static constexpr int kColumns;         // columns read per line (see load_fib_text)
//   static constexpr size_t kReserve;      // duplicate-map room once a file looks like a full table
//   static uint64_t& skipped(Fib&);        // lines or prefixes of the other family
//   static Route from_mrt(const mrt::FirstRoute&);          // prefix and len
//   static bool other_family(TableReader&, const TableReader::Column&);  // skip this line (may fail it)
//   static bool parse(const TableReader::Column&, Route*, std::string* why);  // prefix and len
//   static bool clear_host_bits(Route*);   // true when some were set
//   static uint32_t derive(const Route&, uint32_t ports);
//   static Key key(const Route&);
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>

#include "apps/ipv4/fib_loader.h"
#include "core/batch.h"
#include "core/table_reader.h"
#include "io/mrt.h"

namespace tandem::ipv4::fib_detail {

// "ADDR/LEN": ADDR read by parse_addr(begin, end, addr), LEN a decimal 0..max_len. `family` names
// the address kind in the message for a bad one ("bad IPv4 address").
template <class Addr, class ParseAddr>
bool parse_prefix(const char* b, const char* e, ParseAddr parse_addr, const char* family, uint32_t max_len,
                  Addr* addr, uint8_t* len, std::string* why) {
  const char* slash = static_cast<const char*>(std::memchr(b, '/', static_cast<size_t>(e - b)));
  if (!slash) {
    *why = "missing /length";
    return false;
  }
  if (!parse_addr(b, slash, addr)) {
    *why = std::string("bad ") + family + " address";
    return false;
  }
  uint64_t l = 0;
  if (!parse_decimal(std::string_view(slash + 1, static_cast<size_t>(e - slash - 1)), 999, &l)) {
    *why = "bad prefix length";
    return false;
  }
  if (l > max_len) {
    *why = "prefix length " + std::to_string(l) + " is over " + std::to_string(max_len);
    return false;
  }
  *len = static_cast<uint8_t>(l);
  return true;
}

template <class F>
void finish(typename F::Fib& fib) {
  for (const typename F::Route& r : fib.routes) fib.max_next_hop = std::max(fib.max_next_hop, r.next_hop);
}

template <class F>
typename F::Fib load_fib_mrt(const std::string& path, uint32_t derive_ports) {
  typename F::Fib fib;
  fib.path = path;
  const mrt::FirstRouteStats st = mrt::read_first_routes(path, F::kMrtFamily, [&](const mrt::FirstRoute& f) {
    typename F::Route x = F::from_mrt(f);
    fib.host_bits_cleared += f.host_bits_cleared;
    if (f.has_next_hop) {
      if (f.port > Verdict::kMaxPort) throw typename F::Error(path + ": more than 2^24 - 1 distinct next hops");
      x.next_hop = f.port;
    } else {
      x.next_hop = F::derive(x, derive_ports);
      ++fib.derived_next_hops;
    }
    fib.routes.push_back(x);
  });
  fib.mrt_records = fib.lines = st.records;
  fib.other_paths = st.other_paths;
  F::skipped(fib) = st.other_family;
  fib.next_hop_addresses = st.next_hop_addresses;
  finish<F>(fib);
  return fib;
}

// F::kColumns columns are read so that a line of the other family with extra columns can still be
// skipped (IPv4's choice); a line of this family has at most PREFIX/LEN and NEXTHOP.
template <class F>
typename F::Fib load_fib_text(const std::string& path, uint32_t derive_ports) {
  typename F::Fib fib;
  fib.path = path;
  // A route's key -> its index in routes, so that duplicates replace in place.
  std::unordered_map<typename F::Key, size_t, typename F::KeyHash> seen;
  try {
    TableReader in(path);
    constexpr const char* kTooMany = "too many columns (expected PREFIX/LEN [NEXTHOP])";
    TableReader::Column col[F::kColumns];
    for (int ncol; (ncol = in.next(col, F::kColumns, kTooMany)) > 0;) {
      if (F::other_family(in, col[0])) {
        ++F::skipped(fib);
        continue;
      }
      if (ncol > 2) in.fail(kTooMany);
      typename F::Route r{};
      std::string why;
      if (!F::parse(col[0], &r, &why)) in.fail(why);
      if (F::clear_host_bits(&r)) ++fib.host_bits_cleared;
      if (ncol == 2) {
        r.next_hop = read_next_hop(in, col[1].view());
      } else {
        r.next_hop = F::derive(r, derive_ports);
        ++fib.derived_next_hops;
      }
      // Room for a full table once the file looks like one; a small file does not pay for it.
      if (fib.routes.size() == 4096) seen.reserve(F::kReserve);
      auto [it, inserted] = seen.emplace(F::key(r), fib.routes.size());
      if (inserted) {
        fib.routes.push_back(r);
      } else {
        fib.duplicates.add(in, fib.routes[it->second].next_hop != r.next_hop);
        fib.routes[it->second] = r;
      }
    }
    fib.lines = in.line_number();
  } catch (const TableError& e) {
    throw typename F::Error(e.what());
  }
  finish<F>(fib);
  return fib;
}

template <class F>
typename F::Fib load_fib(const std::string& path, uint32_t derive_ports) {
  if (mrt::looks_like_mrt(path)) {
    try {
      return load_fib_mrt<F>(path, derive_ports);
    } catch (const mrt::MrtError& e) {
      throw typename F::Error(e.what());
    }
  }
  return load_fib_text<F>(path, derive_ports);
}

}  // namespace tandem::ipv4::fib_detail
