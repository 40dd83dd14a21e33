#include "io/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/stop_signal.h"

namespace tandem {
namespace {

// Follows `path` through symbolic links (a chain of them, relative targets taken from the link's
// directory) to the name a write through it would change; a name that does not exist is itself.
std::string resolve_symlinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {  // Linux's own limit (ELOOP)
    struct stat st;
    if (lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(p, ec);
    if (ec) return p;
    p = target.is_absolute() ? target.string() : (std::filesystem::path(p).parent_path() / target).string();
  }
  throw IoError(path + ": too many levels of symbolic links");
}

struct FileId {
  bool regular = false;  // exists and is a regular file
  dev_t dev = 0;
  ino_t ino = 0;
  std::string resolved;  // absolute, links and dot segments resolved as far as the path exists
};

FileId identify(const std::string& path) {
  FileId id;
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    id.regular = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(resolve_symlinks(path), ec);
  id.resolved = ec ? path : std::filesystem::weakly_canonical(abs, ec).string();
  if (ec) id.resolved = abs.string();
  return id;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

mode_t process_umask() {
  // umask() can only be read by setting it; done once, when the first output is created (before
  // any worker thread creates files).
  static const mode_t mask = [] {
    const mode_t m = umask(0);
    umask(m);
    return m;
  }();
  return mask;
}

// Makes a rename durable (best effort: some file systems cannot sync a directory).
void sync_directory(const std::string& file) {
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  const int fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

void set_buffer(FILE* f, size_t bytes) {
  if (bytes == 0) {
    std::setvbuf(f, nullptr, _IONBF, 0);
  } else {
    std::setvbuf(f, nullptr, _IOFBF, bytes);
  }
}

}  // namespace

void check_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  std::vector<FileId> out_ids;
  for (const NamedPath& o : outputs) out_ids.push_back(identify(o.path));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const FileId& out = out_ids[i];
    if (out.regular) {
      for (const NamedPath& in : inputs) {
        const FileId id = identify(in.path);
        if (id.regular && id.dev == out.dev && id.ino == out.ino) {
          throw IoError(outputs[i].flag + " " + outputs[i].path + ": is the same file as the input " + in.flag +
                        " " + in.path + "; refusing to overwrite an input");
        }
      }
    }
    for (size_t j = 0; j < i; ++j) {
      const FileId& other = out_ids[j];
      const bool same = out.regular && other.regular ? out.dev == other.dev && out.ino == other.ino
                        : !exists(outputs[i].path) && !exists(outputs[j].path) && out.resolved == other.resolved;
      if (same) {
        throw IoError(outputs[i].flag + " " + outputs[i].path + ": is the same file as " + outputs[j].flag + " " +
                      outputs[j].path + "; give each output its own file");
      }
    }
  }
}

OutputFile::OutputFile(const std::string& path, size_t buffer_bytes) : path_(path) {
  if (path.empty()) throw IoError("an output file needs a name");
  struct stat st;
  mode_t mode = 0666 & ~process_umask();
  if (stat(path.c_str(), &st) == 0) {  // what `path` leads to, through any links
    if (S_ISDIR(st.st_mode)) throw IoError(path + ": is a directory");
    if (!S_ISREG(st.st_mode)) {
      // Opened by its own name: /dev/stdout and /proc/self/fd/N lead to pipes through links that
      // only the kernel can follow.
      file_ = std::fopen(path.c_str(), "wb");
      if (file_ == nullptr) fail("cannot open for writing", errno);
      set_buffer(file_, buffer_bytes);
      return;
    }
    mode = st.st_mode & 07777;
  }
  target_ = resolve_symlinks(path);
  const std::filesystem::path t(target_);
  // A hidden name beside the destination; long names are cut so that the suffix still fits.
  temp_ = (t.parent_path() / ("." + t.filename().string().substr(0, 200) + ".tmp-XXXXXX")).string();
  const int fd = mkstemp(temp_.data());
  if (fd < 0) {
    const int err = errno;
    temp_.clear();
    fail("cannot create file", err);
  }
  guard_ = std::make_unique<TempFileGuard>(temp_.c_str());
  fchmod(fd, mode);  // mkstemp makes it 0600
  file_ = fdopen(fd, "wb");
  if (file_ == nullptr) {
    const int err = errno;
    close(fd);
    discard();
    fail("cannot create file", err);
  }
  set_buffer(file_, buffer_bytes);
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::commit() {
  if (committed_) return;
  if (file_ == nullptr) throw IoError(path_ + ": write after the file was discarded");
  int err = 0;
  if (std::fflush(file_) != 0 || std::ferror(file_)) err = errno != 0 ? errno : EIO;
  if (err == 0 && !temp_.empty() && fsync(fileno(file_)) != 0) err = errno;
  if (std::fclose(file_) != 0 && err == 0) err = errno;
  file_ = nullptr;
  if (err != 0) {
    discard();
    fail("write failed", err);
  }
  if (!temp_.empty()) {
    if (std::rename(temp_.c_str(), target_.c_str()) != 0) {
      err = errno;
      discard();
      fail("cannot put the file in place", err);
    }
    temp_.clear();
    guard_.reset();
    sync_directory(target_);
  }
  committed_ = true;
}

void OutputFile::discard() {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  if (!temp_.empty()) unlink(temp_.c_str());
  temp_.clear();
  guard_.reset();
}

void OutputFile::forget_stream() {
  file_ = nullptr;
  discard();
}

void OutputFile::fail(const std::string& what, int err) {
  throw IoError(path_ + ": " + what + (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
}

void write_text_file(const std::string& path, const std::string& text) {
  OutputFile out(path);
  if (std::fwrite(text.data(), 1, text.size(), out.stream()) != text.size()) {
    throw IoError(path + ": write failed: " + std::strerror(errno));
  }
  out.commit();
}

}  // namespace tandem
