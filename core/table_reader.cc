#include "core/table_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "core/batch.h"

namespace tandem {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_secret_field(std::string_view name) {
  static constexpr std::string_view kFields[] = {"key", "authkey", "enckey", "auth_key", "enc_key", "psk", "secret"};
  for (std::string_view f : kFields) {
    if (f.size() == name.size() && std::equal(f.begin(), f.end(), name.begin(), [](char a, char b) { return a == lower(b); })) {
      return true;
    }
  }
  return false;
}

// Room for a line at the cap plus what one read brings; at least 64 KiB per read.
size_t buffer_size(size_t max_line) { return max_line + 2 + (size_t{1} << 16); }

}  // namespace

std::string redact_secrets(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    // One token: up to the next whitespace, ',', ';' or quote.
    auto is_sep = [](char c) { return is_space(c) || c == ',' || c == ';' || c == '"' || c == '\''; };
    if (is_sep(text[i])) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && !is_sep(text[j])) ++j;
    const std::string_view tok = text.substr(i, j - i);
    const size_t eq = tok.find('=');
    if (eq != std::string_view::npos && eq + 1 < tok.size() && is_secret_field(tok.substr(0, eq))) {
      out.append(tok.substr(0, eq + 1));
      out += "<redacted>";
    } else {
      out.append(tok);
    }
    i = j;
  }
  return out;
}

std::string quote_excerpt(std::string_view line, size_t max) {
  const std::string clean = redact_secrets(line);
  std::string out;
  for (size_t i = 0; i < clean.size() && out.size() < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(clean[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (out.size() >= max && clean.size() > max) out += "...";
  return out;
}

LineReader::LineReader(std::string path, Limits limits, std::string name)
    : name_(name.empty() ? path : std::move(name)), limits_(limits), buf_(buffer_size(limits.max_line)) {
  if (path == "-") {
    const int fd = dup(STDIN_FILENO);
    f_ = fd < 0 ? nullptr : gzdopen(fd, "rb");
    if (!f_ && fd >= 0) close(fd);
  } else {
    f_ = gzopen(path.c_str(), "rb");
  }
  if (!f_) throw TableError(name_ + ": cannot open: " + std::strerror(errno ? errno : ENOMEM));
  gzbuffer(f_, 1 << 17);
}

LineReader::~LineReader() {
  if (f_) gzclose(f_);
}

void LineReader::fail(const std::string& what) const {
  throw TableError(name_ + ":" + std::to_string(line_no_) + ": " + what + ": `" + quote_excerpt(line_) + "`");
}

void LineReader::fail_line(const std::string& what) {
  const std::string msg = name_ + ":" + std::to_string(line_no_) + ": " + what + ": `" + quote_excerpt(line_) + "`";
  line_ = {};
  throw LineError(msg);
}

bool LineReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  const size_t room = buf_.size() - end_;
  const int n = gzread(f_, buf_.data() + end_, static_cast<unsigned>(std::min<size_t>(room, 1u << 30)));
  int errnum = Z_OK;
  const char* msg = gzerror(f_, &errnum);
  // zlib hands out what it decompressed before noticing a cut stream, and reports the cut
  // (Z_BUF_ERROR, "unexpected end of file") with that read or the next: check every read, so
  // that the cut is reported before the partial last line is parsed.
  if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
    pending_error_ = errnum == Z_BUF_ERROR ? "truncated input: the compressed stream ends inside this line"
                                           : std::string("read error: ") + (msg ? msg : "unknown");
    eof_ = true;
    // The lines decompressed before the cut are whole and are served first; the error comes
    // where the input would have to go on (LineReader::next).
    if (n <= 0) return false;
  } else if (n == 0) {
    eof_ = true;
    return false;
  }
  bytes_ += static_cast<uint64_t>(n);
  if (bytes_ > limits_.max_bytes) {
    throw TableError(name_ + ":" + std::to_string(line_no_ + 1) + ": input larger than " +
                     std::to_string(limits_.max_bytes) + " bytes: refusing to read on (endless or wrong file?)");
  }
  end_ += static_cast<size_t>(n);
  return true;
}

bool LineReader::next(std::string_view* out) {
  while (resync_) {
    const char* b = buf_.data() + begin_;
    if (const char* nl = static_cast<const char*>(std::memchr(b, '\n', end_ - begin_))) {
      begin_ += static_cast<size_t>(nl - b) + 1;
      resync_ = false;
    } else {
      begin_ = end_;
      if (!fill()) {
        if (!pending_error_.empty()) throw TableError(name_ + ":" + std::to_string(line_no_ + 1) + ": " + pending_error_);
        return false;
      }
    }
  }
  size_t scanned = 0;  // bytes of the current line already searched for its newline
  for (;;) {
    const char* b = buf_.data() + begin_;
    const size_t avail = end_ - begin_;
    const char* nl = static_cast<const char*>(std::memchr(b + scanned, '\n', avail - scanned));
    size_t len;
    bool overlong = false;  // no newline within the cap (+ 1 for the CR of a CRLF): refused as it is
    if (nl) {
      len = static_cast<size_t>(nl - b);
    } else if (avail > limits_.max_line + 1) {
      len = limits_.max_line + 1;  // enough to report it: checked below, NUL bytes first
      overlong = true;
    } else {
      scanned = avail;
      if (fill()) continue;
      if (!pending_error_.empty()) throw TableError(name_ + ":" + std::to_string(line_no_ + 1) + ": " + pending_error_);
      if (avail == 0) return false;
      len = avail;  // the last line has no newline
    }
    ++line_no_;
    b = buf_.data() + begin_;
    begin_ += len + (nl ? 1 : 0);
    std::string_view line(b, len);
    if (!overlong && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    line_ = line;
    // The rest of a line refused before its end is skipped, also when it is the file's last.
    resync_ = overlong;
    if (const void* z = std::memchr(line.data(), '\0', line.size())) {
      const size_t col = static_cast<size_t>(static_cast<const char*>(z) - line.data()) + 1;
      fail_line("NUL byte at column " + std::to_string(col) + " (not a text file?)");
    }
    if (line.size() > limits_.max_line) fail_line("line too long (over " + std::to_string(limits_.max_line) + " bytes)");
    *out = line;
    return true;
  }
}

TableReader::TableReader(std::string path, LineReader::Limits limits) : in_(std::move(path), limits) {}

int TableReader::next(Column* cols, int max_columns, const char* too_many) {
  std::string_view line;
  while (in_.next(&line)) {
    const char* p = line.data();
    const char* end = p + line.size();
    if (const char* hash = static_cast<const char*>(std::memchr(p, '#', line.size()))) end = hash;
    int n_cols = 0;
    while (p < end) {
      while (p < end && is_space(*p)) ++p;
      if (p >= end) break;
      const char* s = p;
      while (p < end && !is_space(*p)) ++p;
      if (n_cols == max_columns) fail(too_many);
      cols[n_cols++] = {s, p};
    }
    if (n_cols > 0) return n_cols;
  }
  return 0;
}

void DuplicateKeys::add(const TableReader& in, bool conflict) {
  if (count++ == 0) first = in.path() + ":" + std::to_string(in.line_number());
  conflicting += conflict;
}

std::string DuplicateKeys::warning(std::string_view what) const {
  if (count == 0) return "";
  const size_t colon = first.rfind(':');
  return first.substr(0, colon) + ": " + std::to_string(count) + " duplicate " + std::string(what) + " (" +
         std::to_string(conflicting) + " with another value; the last line wins), the first at " + first;
}

uint32_t read_next_hop(const TableReader& in, std::string_view text) {
  uint64_t nh = 0;
  if (!parse_decimal(text, Verdict::kMaxPort, &nh)) in.fail("next hop must be an integer 0..16777214 (16777215 marks a flood)");
  return static_cast<uint32_t>(nh);
}

bool parse_decimal(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v > max) return false;
  *out = v;
  return true;
}

}  // namespace tandem
