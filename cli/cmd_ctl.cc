// `tandem ctl`: sends table commands to a running `tandem run --control PATH` and reports each
// refusal (cli/control_server.h). Commands come from the command line (one) or, one per line, from
// --file or standard input; blank lines and # comments are skipped.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace tandem::cli {

namespace {

struct CtlOptions {
  std::string socket;
  std::string file;
  std::vector<std::string> words;
};

// Lines sent before their replies are read: enough to fill a batch, few enough that neither side's
// socket buffer fills while the other waits.
constexpr size_t kChunk = 1024;

class Connection {
 public:
  explicit Connection(const std::string& path) {
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) throw UsageError("--socket " + path + ": path too long");
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      const std::string why = std::strerror(errno);
      if (fd_ >= 0) close(fd_);
      throw UsageError("--socket " + path + ": " + why + " (is `tandem run --control " + path + "` running?)");
    }
  }
  ~Connection() { close(fd_); }
  void send_all(const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + done, s.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw UsageError(std::string("ctl: the run closed the connection: ") + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
  }
  std::string read_line() {
    for (;;) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      char chunk[65536];
      const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw UsageError("ctl: the run closed the connection before replying to every command");
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

int ctl(const CtlOptions& o) {
  std::vector<std::string> lines;
  if (!o.words.empty()) {
    if (!o.file.empty()) throw UsageError("ctl: give a command or --file, not both");
    std::string line;
    for (const std::string& w : o.words) line += (line.empty() ? "" : " ") + w;
    lines.push_back(line);
  } else {
    std::unique_ptr<std::ifstream> f;
    if (!o.file.empty() && o.file != "-") {
      f = std::make_unique<std::ifstream>(o.file);
      if (!*f) throw UsageError("--file " + o.file + ": cannot open it");
    }
    std::istream& in = f ? static_cast<std::istream&>(*f) : std::cin;
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.size() > 4000) throw UsageError("ctl: line " + std::to_string(lines.size() + 1) + " is over 4,000 bytes");
      if (line.find('\0') != std::string::npos) throw UsageError("ctl: a NUL byte in line " + std::to_string(lines.size() + 1));
      lines.push_back(line);
    }
  }
  Connection c(o.socket);
  uint64_t sent = 0, refused = 0;
  std::string version = "?";
  for (size_t i = 0; i < lines.size();) {
    std::string out;
    std::vector<size_t> which;
    for (; i < lines.size() && which.size() < kChunk; ++i) {
      const std::string& l = lines[i];
      if (l.empty() || l[0] == '#') continue;  // as the server skips them: no reply comes
      out += l + "\n";
      which.push_back(i);
    }
    if (which.empty()) break;
    c.send_all(out);
    for (const size_t k : which) {
      const std::string r = c.read_line();
      ++sent;
      if (r.rfind("ok ", 0) == 0) {
        version = r.substr(3);
      } else {
        ++refused;
        // The line is named by its number and command only: its arguments may be key material
        // (an IPsec SA's key), which never goes to a log.
        const std::string verb = lines[k].substr(0, lines[k].find_first_of(" \t"));
        std::fprintf(stderr, "line %zu (%s): %s\n", k + 1, verb.c_str(), r.rfind("error ", 0) == 0 ? r.c_str() + 6 : r.c_str());
      }
    }
  }
  std::printf("ctl: %llu command(s), %llu applied, %llu refused; table version %s\n",
              static_cast<unsigned long long>(sent), static_cast<unsigned long long>(sent - refused),
              static_cast<unsigned long long>(refused), version.c_str());
  return refused ? 1 : 0;
}

}  // namespace

void register_ctl(CLI::App& app) {
  auto o = std::make_shared<CtlOptions>();
  CLI::App* c = app.add_subcommand("ctl", "send table updates to a running `tandem run --control SOCKET`");
  c->add_option("--socket", o->socket, "the run's control socket (--control)")->required();
  c->add_option("--file", o->file, "commands, one per line (- or none: standard input)");
  c->add_option("command", o->words, "one command, e.g. add 10.0.0.0/8 3 (ipv4: add PREFIX/LEN NEXTHOP | del PREFIX/LEN)");
  c->callback([o] {
    const int rc = ctl(*o);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::cli
