#include "core/table_reader.h"

#include <cerrno>
#include <charconv>
#include <cstring>

namespace tandem {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

}  // namespace

TableReader::TableReader(std::string path) : path_(std::move(path)), buf_(kMaxLine + 1, '\0') {
  f_ = gzopen(path_.c_str(), "rb");
  if (!f_) throw TableError(path_ + ": cannot open: " + std::strerror(errno ? errno : ENOMEM));
  gzbuffer(f_, 1 << 17);
}

TableReader::~TableReader() {
  if (f_) gzclose(f_);
}

void TableReader::fail(const std::string& what) const {
  throw TableError(path_ + ":" + std::to_string(line_no_) + ": " + what + ": `" + line_ + "`");
}

int TableReader::next(Column* cols, int max_columns, const char* too_many) {
  while (gzgets(f_, buf_.data(), static_cast<int>(buf_.size()))) {
    ++line_no_;
    const size_t n = std::strlen(buf_.c_str());
    line_.assign(buf_.c_str(), n);
    if (n == buf_.size() - 1 && buf_[n - 1] != '\n' && !gzeof(f_)) {
      line_.resize(80);
      fail("line too long (over " + std::to_string(kMaxLine) + " bytes)");
    }
    while (!line_.empty() && (line_.back() == '\n' || line_.back() == '\r')) line_.pop_back();
    const char* p = line_.c_str();
    const char* end = p + line_.size();
    if (const char* hash = static_cast<const char*>(std::memchr(p, '#', line_.size()))) end = hash;
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
  int errnum = 0;
  const char* msg = gzerror(f_, &errnum);
  if (errnum != Z_OK && errnum != Z_STREAM_END) {
    throw TableError(path_ + ":" + std::to_string(line_no_ + 1) + ": read error: " + msg);
  }
  return 0;
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
