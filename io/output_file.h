// Files a command writes (captures, JSON reports): never one of its inputs, and never seen
// half-written.
//
// check_outputs() runs before a command reads anything: an output that is the same file as an
// input (same device and inode, so a symbolic or hard link to the input counts) or as another
// output of the command is refused, naming both paths.
//
// OutputFile writes into a temporary file beside the destination (so that rename() is atomic) and
// puts it in place only on commit(): flushed, synced, checked for write errors, then renamed over
// the destination. Until then readers see the old file (or none); a failure, an exception or a
// signal leaves the destination as it was and removes the temporary. Two commands writing one
// path both produce whole files and the last rename wins. A destination that is a symbolic link
// is written through: its target gets the new contents and the link stays. A destination that
// exists and is not a regular file (/dev/null, a FIFO, a terminal) cannot be renamed over: it is
// written in place, as a stream.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "io/io_error.h"

namespace tandem {

class TempFileGuard;

// A path given on the command line, with the flag that named it, for messages.
struct NamedPath {
  std::string flag;  // e.g. "--pcap"
  std::string path;
};

// Throws IoError when an output is the same regular file as an input or as another output. Paths
// that name nothing are skipped as inputs; as outputs they are compared by their resolved path.
// Non-regular files (devices, FIFOs) are never "the same file": writing /dev/null twice destroys
// nothing.
void check_outputs(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

class OutputFile {
 public:
  // Creates the temporary file (in the destination's directory) with the permissions a new file
  // would get, or those of the file it replaces. Throws IoError naming `path` if it cannot.
  // `buffer_bytes` sizes the stream's buffer; 0 for callers that stage their own large writes.
  explicit OutputFile(const std::string& path, size_t buffer_bytes = size_t{1} << 20);
  // Not committed: removes the temporary file; the destination is untouched.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // The stream to write; null after commit() or discard().
  FILE* stream() const { return file_; }
  // Flushes, syncs and closes the stream, then renames the temporary file over the destination.
  // Throws IoError naming the file on any failure (the temporary is then removed).
  void commit();
  // Closes and removes the temporary file now. Safe to call twice.
  void discard();
  // For a stream that a library closed behind our back (libpcap does on a failed header write):
  // forget it without closing it again, and remove the temporary file.
  void forget_stream();

  const std::string& path() const { return path_; }
  bool committed() const { return committed_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);

  std::string path_;    // as given
  std::string target_;  // `path_` with symbolic links resolved: what gets replaced
  std::string temp_;    // empty when writing in place
  FILE* file_ = nullptr;
  std::unique_ptr<TempFileGuard> guard_;
  bool committed_ = false;
};

// Writes `text` to `path` through an OutputFile (whole or not at all); throws IoError.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace tandem
