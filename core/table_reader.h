// Reading Tandem's text inputs (forwarding tables, rule files, key and name lists): plain or
// gzip-compressed (zlib reads both), from a file or standard input ("-").
//
// Every reader of text input goes through LineReader, so that hostile input fails the same way
// everywhere, with an error naming the file and line and quoting at most a short, printable
// excerpt (secrets redacted):
//   - a NUL byte in a line is an error: C string functions would cut the line there, so one
//     physical line could load as two entries (a hidden route or drop rule);
//   - a line over the reader's cap is an error, never split or skipped;
//   - input beyond a byte cap (kDefaultMaxBytes decompressed) is an error, so that /dev/zero, an
//     endless pipe or a decompression bomb ends instead of filling memory;
//   - a gzip stream that ends early is reported as truncated, before its last, cut line is parsed.
//
// TableReader adds Tandem's table conventions on top: '#' starts a comment, blank lines are
// skipped, columns are separated by whitespace.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

class TableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A TableError about one line (a NUL byte, a line over the cap): the reader has not lost its
// place, so a caller that skips bad lines may go on reading from the next line.
class LineError : public TableError {
 public:
  using TableError::TableError;
};

// `line` as it may appear in a message: at most `max` bytes, control and non-ASCII bytes as \xNN,
// "..." when cut, and the values of secret-bearing fields replaced (redact_secrets).
std::string quote_excerpt(std::string_view line, size_t max = 80);

// Replaces the value of every `NAME=VALUE` token whose NAME is a key field (key, authkey, enckey,
// auth_key, enc_key, psk, secret; any case) with "<redacted>". Key material must never reach a
// log, an error or a JSON report; files that carry keys name them with such fields.
std::string redact_secrets(std::string_view text);

// What a LineReader accepts.
struct LineLimits {
  static constexpr size_t kDefaultMaxLine = 4095;
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1} << 30;  // 1 GiB of text, decompressed
  size_t max_line = kDefaultMaxLine;      // bytes, without the newline
  uint64_t max_bytes = kDefaultMaxBytes;  // of the whole input, decompressed
};

class LineReader {
 public:
  using Limits = LineLimits;
  static constexpr size_t kDefaultMaxLine = LineLimits::kDefaultMaxLine;
  static constexpr uint64_t kDefaultMaxBytes = LineLimits::kDefaultMaxBytes;

  // Opens `path` ("-": standard input); throws TableError("PATH: cannot open: reason").
  // `name` is how messages call the input (the path when empty).
  explicit LineReader(std::string path, LineLimits limits = LineLimits(), std::string name = {});
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its "\n" or "\r\n"; false at the end of the input. The view stays
  // valid until the next call. Throws LineError for a NUL byte or an over-long line (the next call
  // goes on after that line), TableError for input over the byte cap, a truncated gzip stream and
  // a read error.
  bool next(std::string_view* line);

  const std::string& name() const { return name_; }
  uint64_t line_number() const { return line_no_; }  // of the line last returned
  std::string_view line() const { return line_; }

  // Throws TableError("NAME:LINE: what: `excerpt`").
  [[noreturn]] void fail(const std::string& what) const;

 private:
  bool fill();  // reads more input behind what is buffered; false at the end
  [[noreturn]] void fail_line(const std::string& what);

  std::string name_;
  Limits limits_;
  gzFile f_ = nullptr;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // unread bytes: buf_[begin_, end_)
  uint64_t bytes_ = 0;          // read so far, decompressed
  bool eof_ = false;
  std::string pending_error_;  // a read error or a cut stream, raised once the whole lines before it are read
  bool resync_ = false;  // the last line was refused before its end: skip to the next newline
  std::string_view line_;
  uint64_t line_no_ = 0;
};

class TableReader {
 public:
  struct Column {
    const char* b;
    const char* e;
    std::string_view view() const { return {b, static_cast<size_t>(e - b)}; }
    bool contains(char c) const { return view().find(c) != std::string_view::npos; }
  };
  static constexpr size_t kMaxLine = LineReader::kDefaultMaxLine;

  // Opens `path`; throws TableError("PATH: cannot open: reason").
  explicit TableReader(std::string path, LineLimits limits = LineLimits());

  // Reads up to the next line that has columns and splits it into at most `max_columns` of them
  // (they point into line(), valid until the next call). A line with more columns fails with
  // `too_many`. Returns the number of columns, or 0 at the end of the file. Throws TableError as
  // LineReader::next does.
  int next(Column* cols, int max_columns, const char* too_many);

  const std::string& path() const { return in_.name(); }
  uint64_t line_number() const { return in_.line_number(); }  // of the line last read
  std::string_view line() const { return in_.line(); }         // without its newline

  // Throws TableError("PATH:LINE: what: `excerpt`").
  [[noreturn]] void fail(const std::string& what) const { in_.fail(what); }

 private:
  LineReader in_;
};

// Keys that a table file gives more than once. The last line wins, as in a routing daemon's
// configuration, but a user is told: a conflicting duplicate is often a mistake.
struct DuplicateKeys {
  uint64_t count = 0;        // lines whose key an earlier line already had
  uint64_t conflicting = 0;  // of them, lines that changed the key's value
  std::string first;         // "FILE:LINE" of the first of them

  void add(const TableReader& in, bool conflict);
  // "FILE: N duplicate WHAT (M with another value; the last line wins), the first at FILE:LINE",
  // or "" when there were none.
  std::string warning(std::string_view what) const;
};

// A table's NEXTHOP column: an integer 0..Verdict::kMaxPort (core/batch.h; the value above it marks a
// flood). Fails the reader's line otherwise.
uint32_t read_next_hop(const TableReader& in, std::string_view text);

// Parses a whole-token unsigned decimal (no sign, no spaces, at most 20 digits) not above `max`.
bool parse_decimal(std::string_view s, uint64_t max, uint64_t* out);

}  // namespace tandem
