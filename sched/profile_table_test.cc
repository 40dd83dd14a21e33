#include "sched/profile_table.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace tandem::sched {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TableKey sample_key() {
  TableKey k;
  k.app = "ipv4";
  k.app_table = "routes-16k";
  k.traffic = "imix-1m-flows";
  k.cpu_model = "Xeon 8480+";
  k.logical_cpus = 16;
  k.gpu_name = "H100";
  k.tandem_version = "0.9.1";
  k.devices = {"cpu0", "cpu1", "gpu0"};
  return k;
}

ProfileEntry entry(std::vector<double> share, std::vector<uint32_t> batch, double mpps, double p99, double wmax,
                   double widle) {
  ProfileEntry e;
  e.share = std::move(share);
  e.batch = std::move(batch);
  e.mpps_max = mpps;
  e.p50_us = p99 / 3;
  e.p99_us = p99;
  e.latency_at_mpps = mpps / 2;
  e.watts_max = wmax;
  e.watts_idle = widle;
  return e;
}

// Synthetic: a frugal CPU group, two CPU groups, a powerful GPU, everything together.
ProfileTable sample_table() {
  ProfileTable t;
  t.key = sample_key();
  t.energy_source = "gpu0: NVML total-energy counter; cpu: model 30 W + 5 W/core";
  t.entries.push_back(entry({1, 0, 0}, {64, 0, 0}, 5, 30, 100, 70));            // 0: cpu0
  t.entries.push_back(entry({0.5, 0.5, 0}, {64, 64, 0}, 9, 25, 130, 75));       // 1: cpu0 + cpu1
  t.entries.push_back(entry({0, 0, 1}, {0, 0, 1024}, 20, 200, 250, 120));       // 2: gpu0
  t.entries.push_back(entry({0.2, 0.2, 0.6}, {64, 64, 1024}, 30, 150, 320, 120));  // 3: all
  t.entries[3].p50_us = 0.1;  // awkward doubles must round-trip exactly
  t.entries[3].latency_at_mpps = 1.0 / 3;
  t.models["gpu0"] = {12000.5, 0.013, 2.5, 64, 480};
  t.models["cpu0"] = {300, 0.2, 40, 8, 1000};
  t.device_health["gpu0"] = 1.0;
  return t;
}

class ProfileTableFiles : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "pt_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    ::chmod(dir_.c_str(), 0755);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  static std::string read(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  // load()'s error text, or "" when it loads.
  static std::string load_error(const std::string& p) {
    try {
      ProfileTable::load(p);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  // A valid saved table's JSON, changed by `edit`, written to a file; load()'s error for it.
  std::string error_after(const std::function<void(json&)>& edit) {
    sample_table().save(path("good.json"));
    json j = json::parse(read(path("good.json")));
    edit(j);
    return load_error(write("edited.json", j.dump()));
  }
  std::string dir_;
};

void expect_equal(const ProfileTable& a, const ProfileTable& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.energy_source, b.energy_source);
  EXPECT_EQ(a.device_health, b.device_health);
  ASSERT_EQ(a.models.size(), b.models.size());
  for (const auto& [d, m] : a.models) {
    ASSERT_TRUE(b.models.count(d)) << d;
    const DeviceModel& n = b.models.at(d);
    EXPECT_EQ(m.a_ns, n.a_ns);
    EXPECT_EQ(m.b_ns_per_byte, n.b_ns_per_byte);
    EXPECT_EQ(m.c_ns_per_frame, n.c_ns_per_frame);
    EXPECT_EQ(m.parallel, n.parallel);
    EXPECT_EQ(m.samples, n.samples);
  }
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const ProfileEntry &x = a.entries[i], &y = b.entries[i];
    EXPECT_EQ(x.share, y.share);
    EXPECT_EQ(x.batch, y.batch);
    EXPECT_EQ(x.mpps_max, y.mpps_max);
    EXPECT_EQ(x.p50_us, y.p50_us);
    EXPECT_EQ(x.p99_us, y.p99_us);
    EXPECT_EQ(x.latency_at_mpps, y.latency_at_mpps);
    EXPECT_EQ(x.watts_max, y.watts_max);
    EXPECT_EQ(x.watts_idle, y.watts_idle);
    EXPECT_EQ(x.health, y.health);
    EXPECT_EQ(x.profiled, y.profiled);
  }
}

TEST_F(ProfileTableFiles, RoundTripsExactly) {
  ProfileTable t = sample_table();
  t.entries[2].profiled = true;
  t.scale_device("cpu1", 0.7);
  t.save(path("t.json"));
  const ProfileTable u = ProfileTable::load(path("t.json"));
  expect_equal(t, u);
  EXPECT_EQ(u.entries[1].health, 0.7);
  const json j = json::parse(read(path("t.json")));  // the documented layout
  EXPECT_EQ(j["format"], "tandem-schedule-table/1");
  EXPECT_EQ(j["key"]["logical_cpus"], 16);
  EXPECT_EQ(j["key"]["devices"][2], "gpu0");
  EXPECT_EQ(j["models"]["gpu0"]["samples"], 480);
  EXPECT_EQ(j["device_health"]["cpu1"], 0.7);
  EXPECT_EQ(j["entries"][3]["batch"][2], 1024);
  EXPECT_EQ(j["entries"][3]["share"][2], 0.6);
  EXPECT_EQ(j["entries"][2]["profiled"], true);
  EXPECT_EQ(j["entries"][3]["profiled"], false);
}

// Tables written before entries said whether they were profiled: their entries come from runs.
TEST_F(ProfileTableFiles, AnEntryWithoutProfiledCameFromARun) {
  ProfileTable t = sample_table();
  t.entries[0].profiled = true;
  t.save(path("t.json"));
  json j = json::parse(read(path("t.json")));
  for (json& e : j["entries"]) e.erase("profiled");
  std::ofstream(path("old.json")) << j.dump();
  const ProfileTable u = ProfileTable::load(path("old.json"));
  for (const ProfileEntry& e : u.entries) EXPECT_FALSE(e.profiled);
}

TEST_F(ProfileTableFiles, SavesAtomically) {
  const std::string p = path("t.json");
  ProfileTable t = sample_table();
  t.save(p);
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  t.energy_source = "changed";
  t.save(p);  // over an existing file
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  EXPECT_EQ(ProfileTable::load(p).energy_source, "changed");
  const std::string before = read(p);
  t.energy_source = "never written";
  // Works as root too: the temporary name is taken by a folder, so the write fails.
  fs::create_directory(p + ".tmp");
  try {
    t.save(p);
    ADD_FAILURE() << "save over a blocked temporary name succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(p), before);
  fs::remove(p + ".tmp");
  // A table load() would refuse is not written at all.
  ProfileTable bad = t;
  bad.entries[0].share[0] = 0.5;
  EXPECT_THROW(bad.save(p), std::runtime_error);
  EXPECT_EQ(read(p), before);
  EXPECT_FALSE(fs::exists(p + ".tmp"));
}

TEST_F(ProfileTableFiles, UnwritableFolderKeepsOldFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  const std::string p = path("t.json");
  ProfileTable t = sample_table();
  t.save(p);
  const std::string before = read(p);
  ASSERT_EQ(::chmod(dir_.c_str(), 0555), 0);
  t.energy_source = "never written";
  EXPECT_THROW(t.save(p), std::runtime_error);
  ::chmod(dir_.c_str(), 0755);
  EXPECT_EQ(read(p), before);
  EXPECT_FALSE(fs::exists(p + ".tmp"));
}

TEST_F(ProfileTableFiles, LoadRefusesWhatIsNotATable) {
  auto has = [](const std::string& err, const std::string& what) {
    if (err.find(what) != std::string::npos) return testing::AssertionSuccess();
    return testing::AssertionFailure() << "error \"" << err << "\" lacks \"" << what << "\"";
  };
  std::string e = load_error(path("missing.json"));
  EXPECT_TRUE(has(e, path("missing.json")));
  EXPECT_TRUE(has(e, "cannot open"));
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0644), 0);
  EXPECT_TRUE(has(load_error(path("fifo")), "FIFO"));  // refused, not waited on
  EXPECT_TRUE(has(load_error(dir_), "folder"));
  EXPECT_TRUE(has(load_error("/dev/null"), "not a regular file"));
  {
    std::ofstream(path("huge.json")) << "{";
    fs::resize_file(path("huge.json"), (64u << 20) + 1);  // sparse: costs no disk
  }
  EXPECT_TRUE(has(load_error(path("huge.json")), "64 MiB"));
  EXPECT_TRUE(has(load_error(write("garbage", "\x7f" "ELF\x01\x02 not json")), "not JSON"));
  EXPECT_TRUE(has(load_error(write("empty", "")), "not JSON"));
  EXPECT_TRUE(has(load_error(write("array", "[1,2]")), "expected a JSON object"));
  // Edits of a valid file, and what the error must say.
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& j) { j["format"] = "tandem-schedule-table/2"; }, "format"},
      {[](json& j) { j.erase("format"); }, "missing field \"format\""},
      {[](json& j) { j["key"]["logical_cpus"] = "16"; }, "key.logical_cpus: expected an integer"},
      {[](json& j) { j["key"]["logical_cpus"] = -1; }, "key.logical_cpus: negative"},
      {[](json& j) { j["key"]["app"] = 4; }, "key.app: expected a string"},
      {[](json& j) { j["key"]["devices"] = "cpu0"; }, "key.devices: expected an array"},
      {[](json& j) { j["key"]["devices"][1] = "cpu0"; }, "listed twice"},
      {[](json& j) { j["entries"] = json::object(); }, "entries: expected an array"},
      {[](json& j) { j["entries"][0] = 7; }, "entries[0]: expected an object"},
      {[](json& j) { j["entries"][1]["share"][0] = true; }, "entries[1].share: expected a number"},
      {[](json& j) { j["entries"][2]["batch"][2] = 1.5; }, "entries[2].batch: expected an integer"},
      {[](json& j) { j["entries"][2]["batch"][2] = 1ull << 33; }, "is over"},
      {[](json& j) { j["models"]["gpu0"]["parallel"] = nullptr; }, "models.gpu0.parallel"},
      {[](json& j) { j["models"]["gpu9"] = j["models"]["gpu0"]; }, "gpu9"},
      {[](json& j) { j["entries"][3]["share"][0] = 0.3; }, "sums to"},
      {[](json& j) { j["entries"][0]["share"] = {0.5, 0.5}; }, "entries[0].share has 2 elements for 3"},
      {[](json& j) { j["entries"][0]["batch"].push_back(5); }, "entries[0].batch has 4 elements"},
      {[](json& j) { j["entries"][2]["p99_us"] = -1.0; }, "entries[2].p99_us is negative"},
      {[](json& j) { j["device_health"]["gpu0"] = -0.5; }, "device_health.gpu0 is negative"},
      {[](json& j) { j["entries"][1]["profiled"] = 1; }, "entries[1].profiled: expected true or false"},
      {[](json& j) { j["entries"] = json::array(); j["entries"].get_ref<json::array_t&>().resize(100001, 0); },
       "over the limit of 100000"},
  };
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_TRUE(has(error_after(cases[i].first), cases[i].second)) << "case " << i;
  // NaN and infinity cannot be written as JSON numbers; the texts a careless writer produces fail.
  sample_table().save(path("good.json"));
  std::string text = read(path("good.json"));
  const size_t at = text.find("\"mpps_max\":") + 11;
  const std::string num = text.substr(at, text.find(',', at) - at);
  for (const char* bad : {"NaN", "nan", "Infinity", "1e999", "null"}) {
    std::string t = text;
    t.replace(at, num.size(), bad);
    EXPECT_NE(load_error(write("nan.json", t)), "") << bad;
  }
  // Every error names the file.
  EXPECT_TRUE(has(error_after([](json& j) { j["key"].erase("traffic"); }), path("edited.json")));
  // A valid file still loads after all that.
  EXPECT_EQ(load_error(path("good.json")), "");
}

TEST(ProfileTable, MatchesSaysTheFirstDifference) {
  const ProfileTable t = sample_table();
  std::string why = "stale";
  EXPECT_TRUE(t.matches(sample_key(), &why));
  EXPECT_EQ(why, "");
  EXPECT_TRUE(t.matches(sample_key(), nullptr));
  TableKey k = sample_key();
  k.app = "hashing";
  k.traffic = "other";
  EXPECT_FALSE(t.matches(k, &why));
  EXPECT_EQ(why, "made for app ipv4, this run is hashing");
  k = sample_key();
  k.logical_cpus = 8;
  EXPECT_FALSE(t.matches(k, &why));
  EXPECT_EQ(why, "made for 16 logical CPUs, this machine has 8");
  k = sample_key();
  k.devices = {"cpu0", "gpu0"};
  EXPECT_FALSE(t.matches(k, &why));
  EXPECT_EQ(why, "made for devices cpu0,cpu1,gpu0, this run has cpu0,gpu0");
  k = sample_key();
  k.gpu_name = "";
  EXPECT_FALSE(t.matches(k, nullptr));
  EXPECT_FALSE(t.matches(k, &why));
  EXPECT_EQ(why, "made for GPU H100, this machine has (none)");
  k = sample_key();
  k.tandem_version = "1.0";
  EXPECT_FALSE(t.matches(k, &why));
  EXPECT_NE(why.find("0.9.1"), std::string::npos);
}

TEST(ProfileTable, BestPerPolicy) {
  ProfileTable t = sample_table();
  const ProfileEntry* e = t.entries.data();
  // Low load: one CPU group carries it on the least power; latency takes the two CPU groups;
  // throughput the combined entry.
  EXPECT_EQ(t.best(Policy::kEnergy, 2, 700), &e[0]);
  EXPECT_EQ(t.best(Policy::kLatency, 2, 700), &e[1]);
  EXPECT_EQ(t.best(Policy::kThroughput, 2, 700), &e[3]);
  // 8 Mpps needs 8.8 with the margin: cpu0 alone is out.
  EXPECT_EQ(t.best(Policy::kEnergy, 8, 700), &e[1]);
  EXPECT_EQ(t.best(Policy::kEnergy, 8, 700, 0.2), &e[2]);  // 9.6 needed: two CPU groups are out too
  EXPECT_EQ(t.best(Policy::kLatency, 12, 700), &e[3]);
  EXPECT_EQ(t.best(Policy::kEnergy, 12, 700), &e[2]);
  // Nothing sustains 40 Mpps: the most capacity, whatever the policy.
  for (Policy p : {Policy::kEnergy, Policy::kLatency, Policy::kThroughput}) EXPECT_EQ(t.best(p, 40, 700), &e[3]);
  // No load: least idle power.
  EXPECT_EQ(t.best(Policy::kEnergy, 0, 700), &e[0]);
  // The GPU at half speed: the GPU alone (10) no longer sustains 12 Mpps, all together (15) does.
  t.scale_device("gpu0", 0.5);
  EXPECT_EQ(t.best(Policy::kEnergy, 12, 700), &e[3]);
  EXPECT_EQ(t.best(Policy::kEnergy, 20, 700), &e[3]);
  t.scale_device("gpu0", 0.0);  // failed: the two CPU groups are the most left
  EXPECT_EQ(t.best(Policy::kThroughput, 20, 700), &e[1]);
  EXPECT_EQ(ProfileTable().best(Policy::kEnergy, 1, 700), nullptr);
}

TEST(ProfileTable, UpdateBlendsOrAdds) {
  ProfileTable t = sample_table();
  ProfileEntry m = entry({0, 0, 1 + 1e-9}, {0, 0, 1024}, 16, 240, 210, 0);
  m.p50_us = 999;
  t.update(m, 0.25);
  ASSERT_EQ(t.entries.size(), 4u);
  EXPECT_DOUBLE_EQ(t.entries[2].mpps_max, 19);
  EXPECT_DOUBLE_EQ(t.entries[2].p99_us, 210);
  EXPECT_DOUBLE_EQ(t.entries[2].watts_max, 240);
  EXPECT_DOUBLE_EQ(t.entries[2].watts_idle, 120);  // not blended
  EXPECT_DOUBLE_EQ(t.entries[2].p50_us, 200.0 / 3);
  // Another batch size is another configuration: added, with the devices' health.
  t.scale_device("gpu0", 0.8);
  m.batch = {0, 0, 512};
  m.health = 1;
  t.update(m);
  ASSERT_EQ(t.entries.size(), 5u);
  EXPECT_EQ(t.entries[4].batch[2], 512u);
  EXPECT_DOUBLE_EQ(t.entries[4].health, 0.8);
  EXPECT_THROW(t.update(entry({1, 0}, {64, 0}, 1, 1, 1, 1)), std::invalid_argument);
  EXPECT_THROW(t.update(entry({0.5, 0.4, 0}, {64, 64, 0}, 1, 1, 1, 1)), std::invalid_argument);
  EXPECT_THROW(t.update(entry({1, 0, 0}, {64, 0, 0}, NAN, 1, 1, 1)), std::invalid_argument);
  EXPECT_THROW(t.update(m, 0.0), std::invalid_argument);
  EXPECT_EQ(t.entries.size(), 5u);
  // A run's figures never move a profiled entry of the same configuration: added beside it.
  t.entries[4].profiled = true;
  const double profiled_mpps = t.entries[4].mpps_max;
  m.mpps_max = 1;
  t.update(m, 0.5);
  ASSERT_EQ(t.entries.size(), 6u);
  EXPECT_DOUBLE_EQ(t.entries[4].mpps_max, profiled_mpps);
  EXPECT_FALSE(t.entries[5].profiled);
}

TEST(ProfileTable, ScaleDeviceKeepsTheLeastHealthPerEntry) {
  ProfileTable t = sample_table();
  t.scale_device("gpu0", 0.5);
  EXPECT_EQ(t.entries[0].health, 1.0);
  EXPECT_EQ(t.entries[1].health, 1.0);
  EXPECT_EQ(t.entries[2].health, 0.5);
  EXPECT_EQ(t.entries[3].health, 0.5);
  t.scale_device("cpu0", 0.8);
  EXPECT_EQ(t.entries[0].health, 0.8);
  EXPECT_EQ(t.entries[1].health, 0.8);
  EXPECT_EQ(t.entries[2].health, 0.5);  // does not use cpu0
  EXPECT_EQ(t.entries[3].health, 0.5);
  t.scale_device("gpu0", 0.5);  // the same observation again: no compounding
  EXPECT_EQ(t.entries[2].health, 0.5);
  t.scale_device("gpu0", 1.0);  // the other process left
  EXPECT_EQ(t.entries[2].health, 1.0);
  EXPECT_EQ(t.entries[3].health, 0.8);
  EXPECT_EQ(t.device_health.at("cpu0"), 0.8);
  EXPECT_THROW(t.scale_device("gpu7", 0.5), std::invalid_argument);
  EXPECT_THROW(t.scale_device("cpu0", -0.1), std::invalid_argument);
  EXPECT_THROW(t.scale_device("cpu0", NAN), std::invalid_argument);
}

std::vector<BatchSample> synthetic_samples(double a, double b, double c, size_t n, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> frames(16, 1024), size(64, 1500);
  std::normal_distribution<double> err(0.0, 1.0);
  std::vector<BatchSample> s;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t f = frames(rng);
    const uint64_t bytes = uint64_t(f) * size(rng);
    const double t = a + b * double(bytes) + c * f;
    s.push_back({f, bytes, t * (1 + noise * err(rng))});
  }
  return s;
}

TEST(FitDeviceModel, RecoversCoefficientsFromNoisySamples) {
  const double a = 8000, b = 0.02, c = 15;  // GPU-like: launch cost, PCIe bytes, per-frame work
  const DeviceModel m = fit_device_model(synthetic_samples(a, b, c, 2000, 0.01, 1), 64);
  EXPECT_NEAR(m.a_ns, a, 0.05 * a);
  EXPECT_NEAR(m.b_ns_per_byte, b, 0.05 * b);
  EXPECT_NEAR(m.c_ns_per_frame, c, 0.05 * c);
  EXPECT_EQ(m.parallel, 64);
  EXPECT_EQ(m.samples, 2000u);
}

TEST(FitDeviceModel, DegenerateInputs) {
  // Fixed frame size: bytes and frames are collinear, so the per-frame cost folds into b.
  std::vector<BatchSample> fixed;
  for (uint32_t f : {32u, 64u, 128u, 256u, 512u}) fixed.push_back({f, f * 100ull, 1000 + 0.5 * f * 100 + 10.0 * f});
  DeviceModel m = fit_device_model(fixed, 1);
  EXPECT_NEAR(m.a_ns, 1000, 1e-6);
  EXPECT_NEAR(m.b_ns_per_byte, 0.6, 1e-9);
  EXPECT_EQ(m.c_ns_per_frame, 0);
  EXPECT_NEAR(m.batch_ns(300, 30000), 1000 + 0.6 * 30000, 1e-6);
  // A negative true cost is clamped to 0 and the rest refitted.
  std::vector<BatchSample> neg = synthetic_samples(500, 0.3, -20, 200, 0, 2);
  m = fit_device_model(neg, 1);
  EXPECT_GE(m.a_ns, 0);
  EXPECT_GE(m.b_ns_per_byte, 0);
  EXPECT_EQ(m.c_ns_per_frame, 0);
  // One distinct point: cost proportional to bytes.
  m = fit_device_model({{100, 10000, 5000}, {100, 10000, 5000}}, 1);
  EXPECT_EQ(m.a_ns, 0);
  EXPECT_NEAR(m.b_ns_per_byte, 0.5, 1e-12);
  // Nothing usable.
  m = fit_device_model({{100, 10000, NAN}, {100, 10000, -1}}, 4);
  EXPECT_EQ(m.samples, 0u);
  EXPECT_EQ(m.batch_ns(100, 10000), 0);
  EXPECT_EQ(m.parallel, 4);
}

TEST(DeviceModelRls, FollowsAStepChange) {
  const auto before = synthetic_samples(8000, 0.02, 15, 200, 0.01, 3);
  const auto after = synthetic_samples(8000, 0.04, 15, 200, 0.01, 4);  // b doubles (PCIe contention)
  DeviceModelRls rls(fit_device_model({before.begin(), before.begin() + 20}, 64));
  for (const auto& s : before) rls.update(s);
  EXPECT_NEAR(rls.model().b_ns_per_byte, 0.02, 0.002);
  EXPECT_EQ(rls.changes_detected(), 0u);  // 1% noise is not a change
  for (size_t i = 0; i < 50; ++i) rls.update(after[i]);
  EXPECT_NEAR(rls.model().b_ns_per_byte, 0.04, 0.002) << "within 50 samples";
  EXPECT_EQ(rls.changes_detected(), 1u);
  for (size_t i = 50; i < after.size(); ++i) rls.update(after[i]);
  EXPECT_NEAR(rls.model().b_ns_per_byte, 0.04, 0.001);
  EXPECT_NEAR(rls.model().c_ns_per_frame, 15, 3);
  EXPECT_EQ(rls.model().parallel, 64);
  EXPECT_EQ(rls.model().samples, 420u);
  // Steady noisy traffic: the estimate stays put (no false changes, no wind-up).
  DeviceModelRls steady(fit_device_model(before, 64));
  for (const auto& s : synthetic_samples(8000, 0.02, 15, 3000, 0.02, 5)) {
    steady.update(s);
    ASSERT_NEAR(steady.model().b_ns_per_byte, 0.02, 0.002);
  }
  EXPECT_EQ(steady.changes_detected(), 0u);
  // Fixed batch size (one direction excited only): it still predicts that batch well.
  DeviceModelRls fixed(fit_device_model(before, 64));
  for (int i = 0; i < 2000; ++i) fixed.update({256, 256 * 700, 8000 + 0.02 * 256 * 700 + 15 * 256});
  EXPECT_NEAR(fixed.model().batch_ns(256, 256 * 700), 8000 + 0.02 * 256 * 700 + 15 * 256, 1.0);
  EXPECT_EQ(fixed.changes_detected(), 0u);
  // Starting from nothing, it learns too.
  DeviceModelRls cold(DeviceModel{});
  for (const auto& s : before) cold.update(s);
  EXPECT_NEAR(cold.model().b_ns_per_byte, 0.02, 0.002);
}

}  // namespace
}  // namespace tandem::sched
