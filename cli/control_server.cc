#include "cli/control_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/usage_error.h"

namespace tandem::cli {

namespace {

// Lines longer than this are not commands: the session is ended rather than buffered without end.
constexpr size_t kMaxLine = 4096;
// At most this many lines per batch, so that replies keep coming during a long burst.
constexpr size_t kMaxBatch = 4096;
// A reply that cannot be written in this long ends the session.
constexpr int kReplyTimeoutS = 5;
// A session with nothing to read for this long is closed, so that an idle client does not keep
// the others (one is served at a time) waiting.
constexpr uint64_t kIdleNs = 10000000000ull;

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

ControlServer::ControlServer(const std::string& path, TableControl& control) : path_(path), control_(control) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    throw UsageError("--control " + path + ": a socket path of 1 to " + std::to_string(sizeof addr.sun_path - 1) +
                     " characters");
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  struct stat st{};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw UsageError("--control " + path + ": exists and is not a socket: not replaced");
    // A socket some run still listens on is not taken from it; one an earlier run left is replaced.
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool in_use = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) close(probe);
    if (in_use) throw UsageError("--control " + path + ": another run is listening there");
    unlink(path.c_str());
  }
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw UsageError("--control " + path + ": socket: " + std::strerror(errno));
  // Only this user may send table commands.
  const mode_t old = umask(0077);
  const int b = bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old);
  if (b != 0 || listen(listen_fd_, 8) != 0) {
    const std::string why = std::strerror(errno);
    close(listen_fd_);
    throw UsageError("--control " + path + ": " + why);
  }
  thread_ = std::thread([this] { serve(); });
}

ControlServer::~ControlServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  unlink(path_.c_str());
}

void ControlServer::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // A client that stops reading its replies cannot hold the run (its end waits for this thread).
    timeval tv{kReplyTimeoutS, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    session(fd);  // one client at a time: commands from two would interleave anyway
    close(fd);
  }
}

namespace {

// Command lines may carry key material (an IPsec SA's key): their bytes are wiped before the memory
// holding them goes back to the heap.
void wipe(std::string& s) {
  if (!s.empty()) explicit_bzero(s.data(), s.size());
  s.clear();
}
void wipe(std::vector<std::string>& v) {
  for (std::string& s : v) wipe(s);
  v.clear();
}

}  // namespace

void ControlServer::session(int fd) {
  char chunk[65536];
  // Room for the longest line and a chunk: the buffer never moves, so no copy of a line is left
  // behind in memory it was moved out of.
  std::string buf;
  buf.reserve(kMaxLine + sizeof chunk + 1);
  bool open = true;
  uint64_t last = now_ns();
  while (!stop_ && open) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) {
      if (now_ns() - last > kIdleNs) break;
      continue;
    }
    last = now_ns();
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      open = false;  // the client closed: a last line without a newline still counts
      if (buf.empty()) break;
      buf += '\n';
    } else {
      buf.append(chunk, static_cast<size_t>(n));
    }
    // Every complete line that has arrived, in batches.
    size_t start = 0;
    for (;;) {
      std::vector<std::string> lines;
      size_t end;
      while (lines.size() < kMaxBatch && (end = buf.find('\n', start)) != std::string::npos) {
        std::string line = buf.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        start = end + 1;
        if (line.find('\0') != std::string::npos) line = "<a line with a NUL byte>";  // refused as unknown
        if (line.empty() || line[0] == '#') continue;
        lines.push_back(std::move(line));
      }
      if (lines.empty()) break;
      std::vector<std::string> table_lines;
      std::vector<size_t> slot;
      for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i] != "version") {
          slot.push_back(i);
          table_lines.push_back(lines[i]);
        }
      }
      std::vector<std::string> result = table_lines.empty() ? std::vector<std::string>{} : control_.apply(table_lines);
      ++batches_;
      const std::string version = std::to_string(control_.version());
      std::string reply;
      size_t k = 0;
      for (size_t i = 0; i < lines.size(); ++i) {
        ++commands_;
        if (k < slot.size() && slot[k] == i) {
          const std::string& r = result[k++];
          if (r.empty()) {
            reply += "ok " + version + "\n";
          } else {
            ++errors_;
            reply += "error " + r + "\n";
          }
        } else {
          reply += "ok " + version + "\n";
        }
      }
      wipe(lines);
      wipe(table_lines);
      if (!write_all(fd, reply)) {
        open = false;
        break;
      }
    }
    // The lines taken out are wiped where they were; the rest moves to the front.
    explicit_bzero(buf.data(), start);
    buf.erase(0, start);
    if (buf.size() < buf.capacity()) explicit_bzero(buf.data() + buf.size(), buf.capacity() - buf.size());
    if (buf.size() > kMaxLine) {
      write_all(fd, "error a line longer than " + std::to_string(kMaxLine) + " bytes: session ended\n");
      ++errors_;
      break;
    }
  }
  wipe(buf);
  explicit_bzero(chunk, sizeof chunk);
}

}  // namespace tandem::cli
