// Hyperscan (Intel's multi-pattern matcher, Debian's libhyperscan-dev) as a stage 1 of DPI: the
// rule set's patterns as literals (hs_compile_lit_multi; nocase ones with HS_FLAG_CASELESS, each
// reported once per scan), block mode. It finds the same pattern ids as AhoCorasick over the same
// patterns (hyperscan_test checks it on the ET rules and every kind of traffic). Built where Hyperscan was
// found (hyperscan_built()); elsewhere constructing one throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/dpi/ids_rules.h"

namespace tandem::dpi {

// Whether this build has Hyperscan.
bool hyperscan_built();

class HyperscanPatterns {
 public:
  // Throws std::runtime_error with Hyperscan's message when the database cannot be compiled, or
  // where Hyperscan was not built in.
  explicit HyperscanPatterns(const std::vector<Pattern>& patterns);
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

  // The sorted ids (from 1, the rule set's pattern ids) of the patterns in p[0..n) (`out` is
  // cleared first).
  void patterns_in(const uint8_t* p, uint32_t n, const Scratch& scratch, std::vector<uint32_t>* out) const;
  // The same with the calling thread's own scratch, made (or grown to fit this database) on the
  // thread's first scan of it and freed when the thread ends.
  void patterns_in(const uint8_t* p, uint32_t n, std::vector<uint32_t>* out) const;
  size_t database_bytes() const;
  double compile_seconds() const { return compile_seconds_; }
  static std::string version();

 private:
  void scan(const uint8_t* p, uint32_t n, void* scratch, std::vector<uint32_t>* out) const;
  void* db_ = nullptr;
  uint64_t id_ = 0;  // unique per database made in this process: which one a thread's scratch fits
  double compile_seconds_ = 0;
};

}  // namespace tandem::dpi
