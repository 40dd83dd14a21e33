// The control socket of `tandem run --control PATH`: a Unix stream socket on which `tandem ctl`
// (or any client) sends the app's table commands, one per line, and gets one reply line each:
//   ok VERSION          applied; VERSION counts the updates published so far
//   error MESSAGE       not applied (a bad line, a route that is not there)
// Besides the app's commands: "version" (replies "ok VERSION"). The lines that have arrived
// together are applied as one batch (apps/table_control.h), so a burst of updates costs one grace
// period, not one each. The socket file is made by the run (an existing socket file left by an
// earlier run is replaced; any other file is refused) and removed when the run ends.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "apps/table_control.h"

namespace tandem::cli {

class ControlServer {
 public:
  // Listens on `path`; throws UsageError when it cannot.
  ControlServer(const std::string& path, TableControl& control);
  ~ControlServer();  // stops the thread, removes the socket file
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  uint64_t commands() const { return commands_.load(); }
  uint64_t errors() const { return errors_.load(); }
  uint64_t batches() const { return batches_.load(); }

 private:
  void serve();
  void session(int fd);
  std::string path_;
  TableControl& control_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> commands_{0}, errors_{0}, batches_{0};
  std::thread thread_;
};

}  // namespace tandem::cli
