#include "sched/profile_table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace tandem::sched {
namespace {

using nlohmann::json;

// ---- Fitting -----------------------------------------------------------------------------------

struct SubsetFit {
  bool ok = false;
  double coef[3] = {0, 0, 0};
  double sse = 0;
};

// Least squares of y on the chosen columns of x = [1, bytes, frames], by the normal equations of
// unit-norm columns (bytes and frames are orders of magnitude apart; scaled, they weigh alike).
// After elimination a pivot is the squared distance of its column from the earlier ones: near 0,
// the subset is rank deficient (fixed frame size, one batch size): not ok.
SubsetFit fit_subset(const std::vector<std::array<double, 3>>& x, const std::vector<double>& y,
                     const std::vector<int>& cols, const double norm[3]) {
  SubsetFit f;
  const size_t k = cols.size();
  double g[3][4] = {};  // [X^T X | X^T y] of the scaled columns
  for (size_t r = 0; r < k; ++r)
    if (!(norm[cols[r]] > 0)) return f;
  for (size_t i = 0; i < y.size(); ++i)
    for (size_t r = 0; r < k; ++r) {
      const double xr = x[i][cols[r]] / norm[cols[r]];
      for (size_t c = 0; c < k; ++c) g[r][c] += xr * x[i][cols[c]] / norm[cols[c]];
      g[r][k] += xr * y[i];
    }
  for (size_t p = 0; p < k; ++p) {  // positive semidefinite: no pivoting needed
    if (!(g[p][p] > 1e-10)) return f;
    for (size_t r = p + 1; r < k; ++r) {
      const double m = g[r][p] / g[p][p];
      for (size_t c = p; c <= k; ++c) g[r][c] -= m * g[p][c];
    }
  }
  double z[3] = {};
  for (size_t r = k; r-- > 0;) {
    z[r] = g[r][k];
    for (size_t c = r + 1; c < k; ++c) z[r] -= g[r][c] * z[c];
    z[r] /= g[r][r];
  }
  for (size_t j = 0; j < k; ++j) f.coef[cols[j]] = z[j] / norm[cols[j]];
  for (size_t i = 0; i < y.size(); ++i) {  // from the residuals: exact enough to compare subsets
    const double e = y[i] - f.coef[0] * x[i][0] - f.coef[1] * x[i][1] - f.coef[2] * x[i][2];
    f.sse += e * e;
  }
  f.ok = std::isfinite(f.sse) && std::isfinite(f.coef[0]) && std::isfinite(f.coef[1]) && std::isfinite(f.coef[2]);
  return f;
}

bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

DeviceModel fit_device_model(const std::vector<BatchSample>& samples, double parallel) {
  DeviceModel m;
  m.parallel = parallel;
  std::vector<std::array<double, 3>> x;
  std::vector<double> y;
  double yy = 0;
  for (const BatchSample& s : samples) {
    if (!finite_nonneg(s.service_ns)) continue;
    x.push_back({1.0, double(s.bytes), double(s.frames)});
    y.push_back(s.service_ns);
    yy += s.service_ns * s.service_ns;
  }
  m.samples = uint32_t(std::min<size_t>(y.size(), UINT32_MAX));
  if (y.empty()) return m;
  double norm[3] = {};
  for (const auto& row : x)
    for (int j = 0; j < 3; ++j) norm[j] += row[j] * row[j];
  for (double& v : norm) v = std::sqrt(v);
  // Preference order for near-ties (see the header): richer models first, then bytes over frames.
  static const std::vector<std::vector<int>> kSubsets = {{0, 1, 2}, {0, 1}, {0, 2}, {1, 2}, {1}, {2}, {0}};
  SubsetFit best;
  for (const auto& cols : kSubsets) {
    const SubsetFit f = fit_subset(x, y, cols, norm);
    if (!f.ok || f.coef[0] < 0 || f.coef[1] < 0 || f.coef[2] < 0) continue;
    if (!best.ok || f.sse < best.sse - 1e-9 * yy) best = f;
  }
  if (best.ok) {
    m.a_ns = best.coef[0];
    m.b_ns_per_byte = best.coef[1];
    m.c_ns_per_frame = best.coef[2];
  }
  return m;
}

// ---- Recursive least squares -------------------------------------------------------------------

namespace {
constexpr double kPriorUnfitted = 1e4;  // covariance of a model that was never fitted: a weak prior
constexpr double kPriorFitted = 1.0;    // a fitted one counts as about one batch per direction
constexpr double kMaxTrace = 1e5;       // above this, forgetting pauses (anti wind-up)
constexpr double kPriorReset = 100;     // covariance after a detected change: the past counts for little
constexpr int kChangeRun = 3;           // consecutive same-sign errors beyond 4 sigma that mean a change
constexpr uint32_t kWarm = 10;          // batches before the error level is trusted
}  // namespace

DeviceModelRls::DeviceModelRls(DeviceModel initial, double forget)
    : model_(initial), forget_(std::isfinite(forget) ? std::clamp(forget, 0.5, 1.0) : 0.98) {
  const double p0 = initial.samples > 0 ? kPriorFitted : kPriorUnfitted;
  for (int i = 0; i < 3; ++i) p_[i][i] = p0;
}

void DeviceModelRls::update(const BatchSample& s) {
  if (!finite_nonneg(s.service_ns)) return;
  if (!scaled_) {
    // Scale the regressors to about 1 at the traffic's own batch size, so that the three
    // directions of the covariance are comparable.
    byte_scale_ = std::max(1.0, double(s.bytes));
    frame_scale_ = std::max(1.0, double(s.frames));
    theta_ = {model_.a_ns, model_.b_ns_per_byte * byte_scale_, model_.c_ns_per_frame * frame_scale_};
    scaled_ = true;
  }
  const double x[3] = {1.0, double(s.bytes) / byte_scale_, double(s.frames) / frame_scale_};
  double pred = 0;
  for (int i = 0; i < 3; ++i) pred += theta_[i] * x[i];
  const double err = s.service_ns - pred;
  // Change detection: forgetting alone follows a step in about 1 / (1 - forget) batches, too slow
  // when another process takes the device at once. A run of large errors of one sign is a change,
  // not noise: the covariance is reset so that the next batches outweigh the old estimate.
  const double err2 = err * err;
  const double floor2 = 1e-6 * pred * pred;  // errors under 0.1% are never a change (noise-free data)
  if (seen_ >= kWarm && err2 > 16 * std::max(err_var_, floor2)) {
    const int sign = err > 0 ? 1 : -1;
    run_ = sign == run_sign_ ? run_ + 1 : 1;
    run_sign_ = sign;
  } else {
    run_ = 0;
  }
  // The error level: a fast EWMA, clipped at 4 sigma so that a change does not hide itself.
  err_var_ = seen_ < kWarm ? (err_var_ * seen_ + err2) / (seen_ + 1)
                           : 0.95 * err_var_ + 0.05 * std::min(err2, 16 * err_var_);
  ++seen_;
  if (run_ >= kChangeRun) {
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) p_[i][j] = i == j ? kPriorReset : 0;
    run_ = 0;
    ++resets_;
  }
  double px[3] = {}, xpx = 0, trace = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) px[i] += p_[i][j] * x[j];
    xpx += x[i] * px[i];
    trace += p_[i][i];
  }
  const double lambda = trace / forget_ > kMaxTrace ? 1.0 : forget_;
  const double denom = lambda + xpx;
  for (int i = 0; i < 3; ++i) theta_[i] += px[i] / denom * err;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) p_[i][j] = (p_[i][j] - px[i] * px[j] / denom) / lambda;
  for (int i = 0; i < 3; ++i)  // keep it symmetric against rounding drift
    for (int j = i + 1; j < 3; ++j) p_[i][j] = p_[j][i] = 0.5 * (p_[i][j] + p_[j][i]);
  if (model_.samples < std::numeric_limits<uint32_t>::max()) ++model_.samples;
  export_model();
}

void DeviceModelRls::export_model() {
  model_.a_ns = std::max(0.0, theta_[0]);
  model_.b_ns_per_byte = std::max(0.0, theta_[1] / byte_scale_);
  model_.c_ns_per_frame = std::max(0.0, theta_[2] / frame_scale_);
}

// ---- Files -------------------------------------------------------------------------------------

namespace {

constexpr size_t kMaxFileBytes = size_t(64) << 20;

// The file's fields, in the order they are written. One list drives parsing, saving and checking.
struct KeyString { const char* name; std::string TableKey::*member; };
constexpr KeyString kKeyStrings[] = {{"app", &TableKey::app},         {"app_table", &TableKey::app_table},
                                     {"traffic", &TableKey::traffic}, {"cpu_model", &TableKey::cpu_model},
                                     {"gpu_name", &TableKey::gpu_name}, {"tandem_version", &TableKey::tandem_version}};
struct EntryNumber { const char* name; double ProfileEntry::*member; };
constexpr EntryNumber kEntryNumbers[] = {
    {"mpps_max", &ProfileEntry::mpps_max},   {"p50_us", &ProfileEntry::p50_us},
    {"p99_us", &ProfileEntry::p99_us},       {"latency_at_mpps", &ProfileEntry::latency_at_mpps},
    {"watts_max", &ProfileEntry::watts_max}, {"watts_idle", &ProfileEntry::watts_idle},
    {"health", &ProfileEntry::health}};
struct ModelNumber { const char* name; double DeviceModel::*member; };
constexpr ModelNumber kModelNumbers[] = {{"a_ns", &DeviceModel::a_ns}, {"b_ns_per_byte", &DeviceModel::b_ns_per_byte},
                                         {"c_ns_per_frame", &DeviceModel::c_ns_per_frame},
                                         {"parallel", &DeviceModel::parallel}};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("profile table " + path + ": " + what);
}

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

std::string read_bounded(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer must not hang; fstat then refuses it.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (f.fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(path, std::string("cannot stat: ") + std::strerror(errno));
  const mode_t m = st.st_mode;
  if (!S_ISREG(m)) {
    const char* kind = S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a folder" : S_ISCHR(m) ? "a character device"
                       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "special";
    fail(path, std::string("is ") + kind + ", not a regular file");
  }
  if (uint64_t(st.st_size) > kMaxFileBytes)
    fail(path, "is " + std::to_string(st.st_size) + " bytes, over the 64 MiB limit");
  std::string text;
  text.reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, size_t(n));
    if (text.size() > kMaxFileBytes) fail(path, "grew over the 64 MiB limit while being read");
  }
}

// Typed access to the parsed document; every error says where in it ("entries[3].share").
[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::runtime_error(where.empty() ? what : where + ": " + what);
}
const json& field(const json& obj, const std::string& where, const char* name) {
  if (!obj.is_object()) bad(where, std::string("expected an object, got ") + obj.type_name());
  const auto it = obj.find(name);
  if (it == obj.end()) bad(where, std::string("missing field \"") + name + "\"");
  return *it;
}
std::string sub(const std::string& where, const char* name) { return where.empty() ? name : where + "." + name; }
std::string get_string(const json& j, const std::string& where) {
  if (!j.is_string()) bad(where, std::string("expected a string, got ") + j.type_name());
  return j.get<std::string>();
}
double get_number(const json& j, const std::string& where) {
  if (!j.is_number()) bad(where, std::string("expected a number, got ") + j.type_name());
  return j.get<double>();  // range and sign: validate()
}
uint64_t get_unsigned(const json& j, const std::string& where, uint64_t max) {
  if (j.is_number_integer() && !j.is_number_unsigned()) bad(where, "negative");
  if (!j.is_number_unsigned()) bad(where, std::string("expected an integer, got ") + j.type_name());
  const uint64_t v = j.get<uint64_t>();
  if (v > max) bad(where, std::to_string(v) + " is over " + std::to_string(max));
  return v;
}
const json& get_array(const json& j, const std::string& where, size_t max) {
  if (!j.is_array()) bad(where, std::string("expected an array, got ") + j.type_name());
  if (j.size() > max) bad(where, std::to_string(j.size()) + " elements, over the limit of " + std::to_string(max));
  return j;
}
const json& get_object(const json& j, const std::string& where) {
  if (!j.is_object()) bad(where, std::string("expected an object, got ") + j.type_name());
  return j;
}

ProfileTable parse_table(const json& doc) {
  ProfileTable t;
  if (!doc.is_object()) bad("document", std::string("expected a JSON object, got ") + doc.type_name());
  const std::string format = get_string(field(doc, "", "format"), "format");
  if (format != ProfileTable::kFormat)
    bad("format", "\"" + format + "\", expected \"" + ProfileTable::kFormat + "\"");
  const json& k = field(doc, "", "key");
  for (const auto& [name, member] : kKeyStrings) t.key.*member = get_string(field(k, "key", name), sub("key", name));
  t.key.logical_cpus =
      int(get_unsigned(field(k, "key", "logical_cpus"), "key.logical_cpus", std::numeric_limits<int>::max()));
  for (const json& d : get_array(field(k, "key", "devices"), "key.devices", ProfileTable::kMaxDevices))
    t.key.devices.push_back(get_string(d, "key.devices"));
  t.energy_source = get_string(field(doc, "", "energy_source"), "energy_source");
  for (const auto& [dev, mj] : get_object(field(doc, "", "models"), "models").items()) {
    const std::string w = "models." + dev;
    DeviceModel& m = t.models[dev];
    for (const auto& [name, member] : kModelNumbers) m.*member = get_number(field(mj, w, name), sub(w, name));
    m.samples = uint32_t(get_unsigned(field(mj, w, "samples"), sub(w, "samples"), UINT32_MAX));
  }
  for (const auto& [dev, h] : get_object(field(doc, "", "device_health"), "device_health").items())
    t.device_health[dev] = get_number(h, "device_health." + dev);
  const json& entries = get_array(field(doc, "", "entries"), "entries", ProfileTable::kMaxEntries);
  t.entries.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string w = "entries[" + std::to_string(i) + "]";
    ProfileEntry& e = t.entries[i];
    for (const json& v : get_array(field(entries[i], w, "share"), sub(w, "share"), ProfileTable::kMaxDevices))
      e.share.push_back(get_number(v, sub(w, "share")));
    for (const json& v : get_array(field(entries[i], w, "batch"), sub(w, "batch"), ProfileTable::kMaxDevices))
      e.batch.push_back(uint32_t(get_unsigned(v, sub(w, "batch"), UINT32_MAX)));
    for (const auto& [name, member] : kEntryNumbers) e.*member = get_number(field(entries[i], w, name), sub(w, name));
    // Optional (tables written before it had it: entries taken from runs).
    if (const auto it = entries[i].find("profiled"); it != entries[i].end()) {
      if (!it->is_boolean()) bad(sub(w, "profiled"), std::string("expected true or false, got ") + it->type_name());
      e.profiled = it->get<bool>();
    }
  }
  return t;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& d : v) s += (s.empty() ? "" : ",") + d;
  return s.empty() ? "(none)" : s;
}
std::string shown(const std::string& s) { return s.empty() ? "(none)" : s; }

// An entry is as healthy as the least healthy device it uses (a split waits for its slowest part).
double entry_health(const ProfileTable& t, const ProfileEntry& e) {
  double h = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < e.share.size() && i < t.key.devices.size(); ++i)
    if (e.share[i] > 0) {
      const auto it = t.device_health.find(t.key.devices[i]);
      h = std::min(h, it == t.device_health.end() ? 1.0 : it->second);
    }
  return std::isfinite(h) ? h : 1.0;
}

// Writes `text` to path + ".tmp", fsyncs it, and renames it over `path`; removes the temporary on
// any failure, so the old file stays as it was.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  // O_NOFOLLOW: a planted symlink at the temporary name must not redirect the write.
  Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644)};
  if (f.fd < 0) fail(path, "cannot create " + tmp + ": " + std::strerror(errno));
  auto abandon = [&](const std::string& what) {
    const int err = errno;
    if (f.fd >= 0) ::close(f.fd);
    f.fd = -1;
    ::unlink(tmp.c_str());
    fail(path, what + ": " + std::strerror(err));
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(f.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abandon("cannot write " + tmp);
    done += size_t(n);
  }
  if (::fsync(f.fd) != 0) abandon("cannot fsync " + tmp);
  const int fd = std::exchange(f.fd, -1);
  if (::close(fd) != 0) abandon("cannot close " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("cannot rename " + tmp + " over it");
  // Make the rename itself durable. Best effort: the new file is complete either way, and some
  // file systems refuse fsync on a folder.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) (void)::fsync(d.fd);
}

}  // namespace

void ProfileTable::validate(const std::string& context) const {
  auto fault = [&](const std::string& what) { bad(context, what); };
  auto number = [&](double v, const std::string& where) {
    if (!std::isfinite(v)) fault(where + " is not finite");
    if (v < 0) fault(where + " is negative");
  };
  const size_t nd = key.devices.size();
  if (nd == 0) fault("key.devices is empty");
  if (nd > kMaxDevices) fault("more than " + std::to_string(kMaxDevices) + " devices");
  if (key.logical_cpus < 0) fault("key.logical_cpus is negative");
  for (size_t i = 0; i < nd; ++i) {
    if (key.devices[i].empty()) fault("key.devices[" + std::to_string(i) + "] is empty");
    for (size_t j = 0; j < i; ++j)
      if (key.devices[i] == key.devices[j]) fault("device " + key.devices[i] + " is listed twice");
  }
  auto known = [&](const std::string& d) {
    return std::find(key.devices.begin(), key.devices.end(), d) != key.devices.end();
  };
  for (const auto& [dev, m] : models) {
    if (!known(dev)) fault("models has device " + dev + ", which is not in key.devices");
    for (const auto& [name, member] : kModelNumbers) number(m.*member, "models." + dev + "." + name);
    if (m.parallel == 0) fault("models." + dev + ".parallel is 0");
  }
  for (const auto& [dev, h] : device_health) {
    if (!known(dev)) fault("device_health has device " + dev + ", which is not in key.devices");
    number(h, "device_health." + dev);
  }
  if (entries.size() > kMaxEntries)
    fault(std::to_string(entries.size()) + " entries, over the limit of " + std::to_string(kMaxEntries));
  for (size_t i = 0; i < entries.size(); ++i) {
    const ProfileEntry& e = entries[i];
    const std::string w = "entries[" + std::to_string(i) + "]";
    const std::string per = " elements for " + std::to_string(nd) + " devices";
    if (e.share.size() != nd) fault(w + ".share has " + std::to_string(e.share.size()) + per);
    if (e.batch.size() != nd) fault(w + ".batch has " + std::to_string(e.batch.size()) + per);
    double sum = 0;
    for (double s : e.share) {
      number(s, w + ".share");
      if (s > 1 + 1e-6) fault(w + ".share has " + std::to_string(s) + ", over 1");
      sum += s;
    }
    if (std::fabs(sum - 1) > 1e-6) fault(w + ".share sums to " + std::to_string(sum) + ", not 1");
    for (const auto& [name, member] : kEntryNumbers) number(e.*member, w + "." + name);
  }
}

ProfileTable ProfileTable::load(const std::string& path) {
  const std::string text = read_bounded(path);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // syntax, and numbers out of double's range (1e999)
    fail(path, std::string("not JSON: ") + e.what());
  }
  ProfileTable t;
  try {
    t = parse_table(doc);
  } catch (const std::exception& e) {  // type errors; bad_alloc on absurd sizes
    fail(path, e.what());
  }
  t.validate("profile table " + path);
  return t;
}

void ProfileTable::save(const std::string& path) const {
  validate("profile table " + path + " (not saved)");
  using ojson = nlohmann::ordered_json;  // keeps the documented field order
  ojson k;
  for (size_t i = 0; i < std::size(kKeyStrings); ++i) {
    if (i == 4) k["logical_cpus"] = key.logical_cpus;
    k[kKeyStrings[i].name] = key.*kKeyStrings[i].member;
  }
  k["devices"] = key.devices;
  ojson models_j = ojson::object(), health_j = ojson::object();
  for (const auto& [dev, m] : models) {
    for (const auto& [name, member] : kModelNumbers) models_j[dev][name] = m.*member;
    models_j[dev]["samples"] = m.samples;
  }
  for (const auto& [dev, h] : device_health) health_j[dev] = h;
  // One entry per line: readable, diffable, and compact for big tables. Doubles are written with
  // enough digits to read back exactly.
  std::string out = "{\"format\": " + ojson(kFormat).dump() + ",\n \"key\": " + k.dump() +
                    ",\n \"energy_source\": " + ojson(energy_source).dump() + ",\n \"models\": " + models_j.dump() +
                    ",\n \"device_health\": " + health_j.dump() + ",\n \"entries\": [";
  for (size_t i = 0; i < entries.size(); ++i) {
    ojson ej;
    ej["share"] = entries[i].share;
    ej["batch"] = entries[i].batch;
    for (const auto& [name, member] : kEntryNumbers) ej[name] = entries[i].*member;
    ej["profiled"] = entries[i].profiled;
    out += (i ? ",\n  " : "\n  ") + ej.dump();
  }
  out += "]}\n";
  write_atomically(path, out);
}

bool ProfileTable::matches(const TableKey& k, std::string* why) const {
  std::string r;
  auto differ = [&](const char* what, const std::string& mine, const std::string& theirs, const char* run) {
    if (r.empty() && mine != theirs) r = std::string("made ") + what + shown(mine) + ", this " + run + shown(theirs);
  };
  differ("for app ", key.app, k.app, "run is ");
  differ("for app table ", key.app_table, k.app_table, "run uses ");
  differ("for traffic ", key.traffic, k.traffic, "run has ");
  differ("for CPU ", key.cpu_model, k.cpu_model, "machine has ");
  if (r.empty() && key.logical_cpus != k.logical_cpus)
    r = "made for " + std::to_string(key.logical_cpus) + " logical CPUs, this machine has " +
        std::to_string(k.logical_cpus);
  differ("for GPU ", key.gpu_name, k.gpu_name, "machine has ");
  differ("by Tandem ", key.tandem_version, k.tandem_version, "is ");
  differ("for devices ", join(key.devices), join(k.devices), "run has ");
  if (why) *why = r;
  return r.empty();
}

const ProfileEntry* ProfileTable::best(Policy p, double offered_mpps, double mean_frame_bytes,
                                       double margin) const {
  if (entries.empty()) return nullptr;
  auto cap = [](const ProfileEntry& e) { return e.mpps_max * e.health; };
  const bool per_bit = offered_mpps > 0 && mean_frame_bytes > 0;
  // Smaller is better for every policy (throughput negated).
  auto score = [&](const ProfileEntry& e) {
    switch (p) {
      case Policy::kEnergy: return per_bit ? joules_per_mbit(e, offered_mpps, mean_frame_bytes) : e.watts_idle;
      case Policy::kLatency: return e.p99_us;
      case Policy::kThroughput: break;
    }
    return -cap(e);
  };
  const double need = std::max(0.0, offered_mpps) * (1 + std::max(0.0, margin));
  const ProfileEntry* best = nullptr;
  double best_score = 0;
  for (const ProfileEntry& e : entries) {
    if (!(cap(e) > 0 && cap(e) >= need)) continue;
    const double s = score(e);
    if (std::isnan(s)) continue;
    if (!best || s < best_score || (s == best_score && cap(e) > cap(*best))) best = &e, best_score = s;
  }
  if (best) return best;
  for (const ProfileEntry& e : entries)  // nothing sustains it: carry as much as possible
    if (!best || cap(e) > cap(*best)) best = &e;
  return best;
}

void ProfileTable::update(const ProfileEntry& measured, double w) {
  if (!(w > 0 && w <= 1)) throw std::invalid_argument("ProfileTable::update: weight must be in (0, 1]");
  ProfileTable probe;  // reuse validate() for the point's sizes and numbers
  probe.key.devices = key.devices;
  probe.entries.push_back(measured);
  try {
    probe.validate("ProfileTable::update: measured point");
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  for (ProfileEntry& e : entries) {
    if (e.batch != measured.batch || e.profiled != measured.profiled) continue;
    bool same = true;
    for (size_t i = 0; i < e.share.size() && same; ++i) same = std::fabs(e.share[i] - measured.share[i]) <= 1e-6;
    if (!same) continue;
    e.mpps_max += w * (measured.mpps_max - e.mpps_max);
    e.p99_us += w * (measured.p99_us - e.p99_us);
    e.watts_max += w * (measured.watts_max - e.watts_max);
    return;
  }
  if (entries.size() >= kMaxEntries) throw std::length_error("ProfileTable::update: the table is full");
  entries.push_back(measured);
  entries.back().health = entry_health(*this, entries.back());
}

void ProfileTable::scale_device(const std::string& device, double ratio) {
  if (std::find(key.devices.begin(), key.devices.end(), device) == key.devices.end())
    throw std::invalid_argument("ProfileTable::scale_device: unknown device " + device);
  if (!finite_nonneg(ratio))
    throw std::invalid_argument("ProfileTable::scale_device: ratio for " + device + " must be finite and >= 0");
  device_health[device] = ratio;
  for (ProfileEntry& e : entries) e.health = entry_health(*this, e);
}

}  // namespace tandem::sched
