// Pieces of `tandem bench anchors` shared by its sections (bench_anchors.cc: IPv4 and hash;
// bench_anchors_ipv6.cc: IPv6).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_report.h"

namespace tandem::cli::anchors {

struct Options {
  std::string fib;
  std::vector<std::string> sections = {"ipv4", "ipv6", "hash", "l2"};
  size_t n = 10'000'000;
  size_t hash_keys = 16u << 20;  // keys of the hash and L2 tables: CuckooSwitch's large table
  size_t ipv6_random = 200'000;  // the G-Opt paper's worst case; 0: off
  int reps = 5;
  int core = -1;
  uint64_t seed = 1;
  size_t dpdk_mem_mib = 6144;
  std::string json;
};

// One table of the report: rows timed on the same keys, each checked against the reference results.
struct Section {
  std::string title;
  std::string baseline;  // the row ratios are taken against
  nlohmann::json config = nlohmann::json::object();
  std::vector<bench::Row> rows;
  std::vector<std::pair<std::string, std::string>> skipped;
  nlohmann::json checks = nlohmann::json::object();
  size_t mismatched_rows = 0;

  std::vector<uint32_t> want;  // the reference results, one per key

  // Adds a timed row and compares its results `got` with `want` (a difference counts as a
  // mismatch); then poisons `got` for the next row.
  void row(const std::string& name, const std::string& note, double items, std::vector<double> secs,
           std::vector<uint32_t>& got);
  void skip(const std::string& name, const std::string& why);
  void print() const;
  nlohmann::json json() const;
};

std::vector<Section> bench_ipv6(const Options& o);

}  // namespace tandem::cli::anchors
