// The deterministic mutations of the fuzz tests that run as ordinary tests (tests/*_fuzz_test.cc):
// byte edits aimed at text syntax (separators, quotes, digits, escapes, NUL bytes, truncation,
// duplicated spans, numbers of any size), applied to slices of real files.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tandem::fuzz {

// The first `max_lines` lines of a (gzip or plain) file, each with its newline.
inline std::vector<std::string> lines_of_gz(const std::string& path, size_t max_lines) {
  std::vector<std::string> out;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return out;
  char buf[65536];
  while (out.size() < max_lines && gzgets(f, buf, sizeof buf)) out.emplace_back(buf);
  gzclose(f);
  return out;
}

inline void mutate(std::string& s, std::mt19937_64& rng) {
  static const char kSyntax[] = "|\"\\;:(),!-/.[]$ 0123456789abcdefABCDEF\n\t#*x";
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng() % s.size();
    switch (rng() % 8) {
      case 0: s[at] = kSyntax[rng() % (sizeof kSyntax - 1)]; break;
      case 1: s.insert(at, 1, kSyntax[rng() % (sizeof kSyntax - 1)]); break;
      case 2: s.erase(at, 1 + rng() % 8); break;
      case 3: s[at] = static_cast<char>(rng()); break;
      case 4: s.resize(at); break;  // truncated
      case 5: {                     // a span repeated
        const size_t n = std::min<size_t>(1 + rng() % 40, s.size() - at);
        s.insert(at, s.substr(at, n));
        break;
      }
      case 6: s.insert(at, 1, rng() % 2 ? '\0' : '\r'); break;  // what C string functions and CRLF readers trip on
      default: s.insert(at, std::to_string(static_cast<int64_t>(rng()) >> (rng() % 64))); break;  // numbers of any size
    }
  }
}

}  // namespace tandem::fuzz
