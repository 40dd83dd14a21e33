#include "apps/dpi/hyperscan_patterns.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>

#ifdef TANDEM_HAVE_HYPERSCAN
#include <hs/hs.h>
#endif

namespace tandem::dpi {

#ifdef TANDEM_HAVE_HYPERSCAN

bool hyperscan_built() { return true; }

namespace {

std::atomic<uint64_t> next_database_id{1};

// One scratch per thread, grown to fit each database the thread scans (hs_alloc_scratch keeps it
// valid for the databases it fitted before); `fits` names the last one checked.
struct ThreadScratch {
  hs_scratch_t* s = nullptr;
  uint64_t fits = 0;
  ~ThreadScratch() { hs_free_scratch(s); }
};

}  // namespace

HyperscanPatterns::HyperscanPatterns(const std::vector<Pattern>& patterns) {
  id_ = next_database_id.fetch_add(1, std::memory_order_relaxed);
  // Hyperscan refuses a database of no patterns; a rule set without contents (or left without
  // any by updates) finds nothing, with no database to scan.
  if (patterns.empty()) return;
  std::vector<const char*> expr;
  std::vector<unsigned> flags, ids;
  std::vector<size_t> lens;
  for (size_t i = 0; i < patterns.size(); ++i) {
    expr.push_back(patterns[i].bytes.data());
    lens.push_back(patterns[i].bytes.size());
    flags.push_back(HS_FLAG_SINGLEMATCH | (patterns[i].nocase ? HS_FLAG_CASELESS : 0u));
    ids.push_back(static_cast<unsigned>(i + 1));
  }
  const auto t0 = std::chrono::steady_clock::now();
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile_lit_multi(expr.data(), flags.data(), ids.data(), lens.data(), static_cast<unsigned>(expr.size()),
                           HS_MODE_BLOCK, nullptr, &db, &err) != HS_SUCCESS) {
    const std::string msg = err && err->message ? err->message : "unknown error";
    hs_free_compile_error(err);
    throw std::runtime_error("hyperscan: cannot compile the patterns: " + msg);
  }
  compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  db_ = db;
}

HyperscanPatterns::~HyperscanPatterns() { hs_free_database(static_cast<hs_database_t*>(db_)); }

HyperscanPatterns::Scratch::Scratch(const HyperscanPatterns& db) {
  if (!db.db_) return;
  hs_scratch_t* s = nullptr;
  if (hs_alloc_scratch(static_cast<hs_database_t*>(db.db_), &s) != HS_SUCCESS) {
    throw std::runtime_error("hyperscan: cannot allocate scratch");
  }
  s_ = s;
}

HyperscanPatterns::Scratch::~Scratch() { hs_free_scratch(static_cast<hs_scratch_t*>(s_)); }

void HyperscanPatterns::scan(const uint8_t* p, uint32_t n, void* scratch, std::vector<uint32_t>* out) const {
  out->clear();
  if (!db_) return;
  auto on_match = [](unsigned id, unsigned long long, unsigned long long, unsigned, void* ctx) -> int {
    static_cast<std::vector<uint32_t>*>(ctx)->push_back(id);
    return 0;
  };
  if (hs_scan(static_cast<hs_database_t*>(db_), reinterpret_cast<const char*>(p), n, 0,
              static_cast<hs_scratch_t*>(scratch), on_match, out) != HS_SUCCESS) {
    throw std::runtime_error("hyperscan: hs_scan failed");
  }
  std::sort(out->begin(), out->end());
}

void HyperscanPatterns::patterns_in(const uint8_t* p, uint32_t n, const Scratch& scratch, std::vector<uint32_t>* out) const {
  scan(p, n, scratch.get(), out);
}

void HyperscanPatterns::patterns_in(const uint8_t* p, uint32_t n, std::vector<uint32_t>* out) const {
  thread_local ThreadScratch ts;
  if (!db_) return out->clear();
  if (ts.fits != id_) {
    ts.fits = 0;  // a failed allocation frees the scratch it was to grow
    if (hs_alloc_scratch(static_cast<hs_database_t*>(db_), &ts.s) != HS_SUCCESS) {
      throw std::runtime_error("hyperscan: cannot allocate scratch");
    }
    ts.fits = id_;
  }
  scan(p, n, ts.s, out);
}

size_t HyperscanPatterns::database_bytes() const {
  size_t b = 0;
  if (db_) hs_database_size(static_cast<hs_database_t*>(db_), &b);
  return b;
}

std::string HyperscanPatterns::version() { return hs_version(); }

#else  // without Hyperscan

bool hyperscan_built() { return false; }

HyperscanPatterns::HyperscanPatterns(const std::vector<Pattern>&) {
  throw std::runtime_error("hyperscan: this build has no Hyperscan (install libhyperscan-dev and rebuild)");
}
HyperscanPatterns::~HyperscanPatterns() = default;
HyperscanPatterns::Scratch::Scratch(const HyperscanPatterns&) {}
HyperscanPatterns::Scratch::~Scratch() = default;
void HyperscanPatterns::scan(const uint8_t*, uint32_t, void*, std::vector<uint32_t>*) const {}
void HyperscanPatterns::patterns_in(const uint8_t*, uint32_t, const Scratch&, std::vector<uint32_t>*) const {}
void HyperscanPatterns::patterns_in(const uint8_t*, uint32_t, std::vector<uint32_t>*) const {}
size_t HyperscanPatterns::database_bytes() const { return 0; }
std::string HyperscanPatterns::version() { return ""; }

#endif

}  // namespace tandem::dpi
