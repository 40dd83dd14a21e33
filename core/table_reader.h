// Line-by-line reading of Tandem's text tables (forwarding tables now, rule files later): plain or
// gzip-compressed (zlib reads both), '#' starts a comment, blank lines are skipped, columns are
// separated by whitespace. Every error names the file and line: "FILE:LINE: what: `the line`".
#pragma once

#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tandem {

class TableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TableReader {
 public:
  struct Column {
    const char* b;
    const char* e;
    std::string_view view() const { return {b, static_cast<size_t>(e - b)}; }
    bool contains(char c) const { return view().find(c) != std::string_view::npos; }
  };
  static constexpr size_t kMaxLine = 4095;

  // Opens `path`; throws TableError("PATH: cannot open: reason").
  explicit TableReader(std::string path);
  ~TableReader();
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  // Reads up to the next line that has columns and splits it into at most `max_columns` of them
  // (they point into line(), valid until the next call). A line with more columns fails with
  // `too_many`. Returns the number of columns, or 0 at the end of the file. Throws TableError for
  // a line over kMaxLine bytes and for a read or decompression error.
  int next(Column* cols, int max_columns, const char* too_many);

  const std::string& path() const { return path_; }
  uint64_t line_number() const { return line_no_; }  // of the line last read (lines read so far)
  const std::string& line() const { return line_; }   // without its newline

  // Throws TableError("PATH:LINE: what: `line`").
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string path_;
  gzFile f_ = nullptr;
  std::string buf_;
  std::string line_;
  uint64_t line_no_ = 0;
};

// Parses a whole-token unsigned decimal (no sign, no spaces, at most 20 digits) not above `max`.
bool parse_decimal(std::string_view s, uint64_t max, uint64_t* out);

}  // namespace tandem
