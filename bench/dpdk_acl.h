// DPDK's rte_acl as the comparator of `tandem bench classify`: the same rules (priority = order,
// first match wins) in an rte_acl context on the bench's external heap (bench/dpdk_env.h), and
// the same headers laid out as rte_acl reads them (network byte order, fields in 4-byte groups).
// Only built where DPDK was found (TANDEM_HAVE_DPDK).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/acl/acl_core.h"

namespace tandem::bench {

class DpdkAcl {
 public:
  // Builds the context; throws std::runtime_error (with DPDK's reason) when it cannot, e.g. when a
  // rule's address range is not a prefix.
  DpdkAcl(const std::vector<acl::Rule>& rules, int socket);
  ~DpdkAcl();
  DpdkAcl(const DpdkAcl&) = delete;
  DpdkAcl& operator=(const DpdkAcl&) = delete;

  // Converts headers once into rte_acl's input layout (kept here).
  void set_headers(const acl::Header* h, size_t n);
  // Classifies the headers given to set_headers in bursts of `burst`: out[i] = rule index or
  // acl::kNoMatch.
  void classify(uint32_t* out, uint32_t burst) const;
  // The classify method in use: at first the one rte_acl picks itself, the widest this CPU and
  // build allow ("avx512x32", "avx512x16", "avx2", "sse" or "scalar").
  const std::string& algorithm() const;
  // Switches to the method named so; false where this CPU or build does not have it.
  bool set_algorithm(const std::string& name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::bench
