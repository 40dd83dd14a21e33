// Hyperscan (Intel's multi-pattern matcher, Debian's libhyperscan-dev) as the comparator of
// `tandem bench dpi`: the same patterns as literals (hs_compile_lit_multi; nocase ones with
// HS_FLAG_CASELESS, each reported once per scan), block mode, one scratch per thread. Only built
// where Hyperscan was found (TANDEM_HAVE_HYPERSCAN).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/dpi/ids_rules.h"

namespace tandem::bench {

class HyperscanPatterns {
 public:
  // Throws std::runtime_error with Hyperscan's message when the database cannot be compiled.
  explicit HyperscanPatterns(const std::vector<dpi::Pattern>& patterns);
  ~HyperscanPatterns();
  HyperscanPatterns(const HyperscanPatterns&) = delete;
  HyperscanPatterns& operator=(const HyperscanPatterns&) = delete;

  // A scratch space for one thread.
  class Scratch {
   public:
    explicit Scratch(const HyperscanPatterns& db);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    void* get() const { return s_; }

   private:
    void* s_ = nullptr;
  };

  // The sorted ids of the patterns in p[0..n) (`out` is cleared first).
  void patterns_in(const uint8_t* p, uint32_t n, const Scratch& scratch, std::vector<uint32_t>* out) const;
  size_t database_bytes() const;
  double compile_seconds() const { return compile_seconds_; }
  std::string version() const;

 private:
  void* db_ = nullptr;
  double compile_seconds_ = 0;
};

}  // namespace tandem::bench
