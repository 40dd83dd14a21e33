// `tandem run --metrics HOST:PORT`: the run's figures in the Prometheus text exposition format
// (version 0.0.4) at http://HOST:PORT/metrics, served by cpp-httplib on a thread of its own. The
// page is rendered on each request from figures the workers publish (sched/workers.h
// WorkerProgress), so a scrape never stops or slows the data path.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace tandem::cli {

class MetricsServer {
 public:
  // Listens on "HOST:PORT" (HOST an address, e.g. 127.0.0.1); throws UsageError when it cannot,
  // or when this build has no HTTP library.
  MetricsServer(const std::string& address, std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One metric in the text format: HELP and TYPE lines, then `name{labels} value` per sample.
struct MetricSample {
  std::string labels;  // e.g. worker="0"; empty: none
  double value;
};
void append_metric(std::string& out, const std::string& name, const char* type, const std::string& help,
                   const std::vector<MetricSample>& samples);

}  // namespace tandem::cli
