#include "cli/metrics_server.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/usage_error.h"

#ifdef TANDEM_HAVE_HTTPLIB
#include <httplib.h>
#endif

namespace tandem::cli {

void append_metric(std::string& out, const std::string& name, const char* type, const std::string& help,
                   const std::vector<MetricSample>& samples) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const MetricSample& s : samples) {
    char v[64];
    // Counters are integers; print them whole (%.17g would too, up to 2^53).
    std::snprintf(v, sizeof v, "%.17g", s.value);
    out += name + (s.labels.empty() ? "" : "{" + s.labels + "}") + " " + v + "\n";
  }
}

#ifdef TANDEM_HAVE_HTTPLIB

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
};

MetricsServer::MetricsServer(const std::string& address, std::function<std::string()> render)
    : impl_(std::make_unique<Impl>()) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon != std::string::npos && colon > 0) {
    try {
      size_t used = 0;
      port = std::stoi(address.substr(colon + 1), &used);
      if (used != address.size() - colon - 1) port = -1;
    } catch (const std::exception&) {
      port = -1;
    }
  }
  if (port < 1 || port > 65535) throw UsageError("--metrics " + address + ": expected HOST:PORT, e.g. 127.0.0.1:9100");
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  impl_->server.Get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  impl_->server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("tandem: metrics at /metrics\n", "text/plain");
  });
  if (!impl_->server.bind_to_port(host.c_str(), port)) {
    throw UsageError("--metrics " + address + ": cannot listen there (address in use, or not this host's?)");
  }
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() does nothing before the listen loop runs: wait for it, so that the destructor ends it.
  for (int i = 0; i < 2000 && !impl_->server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

#else

struct MetricsServer::Impl {};

MetricsServer::MetricsServer(const std::string& address, std::function<std::string()>) {
  throw UsageError("--metrics " + address + ": this build has no HTTP library (install libcpp-httplib-dev and rebuild)");
}

MetricsServer::~MetricsServer() = default;

#endif

}  // namespace tandem::cli
