#include "gpu/table_updates.h"

#include <stdexcept>
#include <utility>

#include "core/clock.h"
#include "core/usage_error.h"
#include "gpu/gpu_runtime.h"

namespace tandem::gpu {

void DeviceTableUpdates::stage(void* device_dst, const void* src, size_t bytes) {
  if (abandoned()) return;  // nothing reads the device copy any more: nothing is kept for it
  // Copied first: an allocation that fails leaves what was staged as it was.
  std::vector<uint8_t> block(static_cast<const uint8_t*>(src), static_cast<const uint8_t*>(src) + bytes);
  staged_[reinterpret_cast<uintptr_t>(device_dst)] = std::move(block);
}

void DeviceTableUpdates::merge(Blocks& into, Blocks& from) {
  // A block staged again (a later version) replaces the older copy.
  for (auto& [addr, bytes] : from) into[addr] = std::move(bytes);
  from.clear();
}

void DeviceTableUpdates::commit(uint64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abandoned()) {
    staged_.clear();
    committed_.clear();
    pending_.store(false, std::memory_order_relaxed);
    return;
  }
  merge(committed_, staged_);
  committed_version_ = version;
  pending_.store(true, std::memory_order_release);
}

void DeviceTableUpdates::abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  abandoned_.store(true, std::memory_order_release);
  committed_.clear();
  pending_.store(false, std::memory_order_relaxed);
}

void DeviceTableUpdates::apply() {
  if (abandoned()) return;
  // The blocks taken here are lost if a copy fails: the engine then fails over for good, and the
  // runner abandons the copy (quiesce).
  Blocks blocks;
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abandoned()) return;  // abandoned since the check above: nothing was copied
    blocks.swap(committed_);
    version = committed_version_;
    taken_version_ = version;
    pending_.store(false, std::memory_order_relaxed);
  }
  if (blocks.empty()) {
    // A version that wrote nothing (a MAC bound again to its port): the device holds it already.
    device_version_.store(version, std::memory_order_release);
    return;
  }
  const uint64_t t0 = now_ns();
  // The batches in flight read the table as it was: let them finish before it changes.
  synchronize_device();
  std::vector<uint8_t> run;
  uintptr_t run_start = 0;
  uint64_t copied = 0;
  auto flush = [&] {
    if (!run.empty()) copy_to_device(reinterpret_cast<void*>(run_start), run.data(), run.size());
    copied += run.size();
    run.clear();
  };
  for (const auto& [addr, bytes] : blocks) {
    if (run.empty() || addr != run_start + run.size()) {
      flush();
      run_start = addr;
    }
    run.insert(run.end(), bytes.begin(), bytes.end());
  }
  flush();
  // A copy from pageable memory may return before its data is in place.
  synchronize_device();
  blocks_copied_.fetch_add(blocks.size(), std::memory_order_relaxed);
  bytes_copied_.fetch_add(copied, std::memory_order_relaxed);
  applies_.fetch_add(1, std::memory_order_relaxed);
  apply_ns_.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  device_version_.store(version, std::memory_order_release);
}

std::pair<uint64_t, uint64_t> DeviceTableUpdates::versions_read() {
  std::lock_guard<std::mutex> lock(mu_);
  return {device_version_.load(std::memory_order_acquire), taken_version_};
}

DeviceTableVersions::DeviceTableVersions(std::shared_ptr<DeviceTableUpdates> updates, void* device_root,
                                         size_t root_bytes)
    : updates_(std::move(updates)), device_root_(device_root), root_bytes_(root_bytes) {}

void DeviceTableUpdates::count_upload(uint64_t bytes, uint64_t ns) {
  uploads_.fetch_add(1, std::memory_order_relaxed);
  uploaded_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  upload_ns_.fetch_add(ns, std::memory_order_relaxed);
}

void DeviceTableVersions::publish(uint64_t version, UploadedVersion v, uint64_t upload_ns) {
  if (v.root.size() != root_bytes_) throw std::invalid_argument("device table root of the wrong size");
  // Every allocation before the commit: once committed, the version must be kept.
  kept_.reserve(kept_.size() + 1);
  std::vector<std::pair<uint64_t, std::shared_ptr<void>>> still;
  still.reserve(kept_.size() + 1);
  updates_->stage(device_root_, v.root.data(), root_bytes_);
  updates_->commit(version);
  kept_.emplace_back(version, std::move(v.buffers));
  updates_->count_upload(v.bytes, upload_ns);
  // Version x reads the kept version at or below it (none: the caller's). An apply() can take
  // only the newest committed version, which is kept.
  const auto [device, taken] = updates_->versions_read();
  for (size_t i = 0; i < kept_.size(); ++i) {
    const uint64_t from = kept_[i].first;
    const bool newest = i + 1 == kept_.size();
    const auto reads = [&](uint64_t x) { return from <= x && (newest || x < kept_[i + 1].first); };
    if (newest || reads(device) || reads(taken)) still.push_back(std::move(kept_[i]));
  }
  // The others' device memory is freed here (cudaFree waits for the device's work: this thread's
  // time, not the data path's).
  kept_ = std::move(still);
}

namespace {

class UpdatingRunner final : public OffloadRunner {
 public:
  UpdatingRunner(std::unique_ptr<OffloadRunner> inner, std::shared_ptr<DeviceTableUpdates> updates)
      : inner_(std::move(inner)), updates_(std::move(updates)) {}
  GpuMode mode() const override { return inner_->mode(); }
  size_t capacity() const override { return inner_->capacity(); }
  int slots() const override { return inner_->slots(); }
  size_t in_item_bytes() const override { return inner_->in_item_bytes(); }
  size_t out_item_bytes() const override { return inner_->out_item_bytes(); }
  void* in(int slot) override { return inner_->in(slot); }
  void* out(int slot) override { return inner_->out(slot); }
  void submit(int slot, size_t n) override {
    // An abandoned copy no longer follows the updates: the engine must answer on the CPU.
    if (updates_->abandoned()) throw GpuError("live table updates: the device copy was abandoned");
    std::lock_guard<std::mutex> lock(updates_->submit_lock());
    if (updates_->pending()) updates_->apply();
    inner_->submit(slot, n);
  }
  void wait(int slot) override { inner_->wait(slot); }
  bool ready(int slot) override { return inner_->ready(slot); }
  // A failure: the engine runs on the CPU from now on, and no device copy is read any more.
  void quiesce() noexcept override {
    updates_->abandon();
    inner_->quiesce();
  }

 private:
  std::unique_ptr<OffloadRunner> inner_;
  std::shared_ptr<DeviceTableUpdates> updates_;
};

}  // namespace

std::unique_ptr<OffloadRunner> with_table_updates(std::unique_ptr<OffloadRunner> runner,
                                                  std::shared_ptr<DeviceTableUpdates> updates) {
  if (runner->mode() == GpuMode::kPersistent) {
    throw GpuError("live table updates: the persistent kernel runs through them; use --gpu-mode async, graph or mapped");
  }
  if (updates->abandoned()) {
    throw GpuError("live table updates: the device copy was abandoned after a GPU failure and no longer follows them");
  }
  return std::make_unique<UpdatingRunner>(std::move(runner), std::move(updates));
}

void persistent_refused_with_control(GpuMode mode, bool has_control) {
  // A persistent kernel is never between batches, where updates are applied.
  if (mode == GpuMode::kPersistent && has_control) {
    throw UsageError("live table updates: the persistent kernel runs through them; use --gpu-mode async, graph or "
                     "mapped");
  }
}

std::unique_ptr<OffloadRunner> runner_for_updates(std::unique_ptr<OffloadRunner> runner,
                                                  const std::shared_ptr<DeviceTableUpdates>& updates,
                                                  bool* persistent_made) {
  if (runner->mode() != GpuMode::kPersistent) return with_table_updates(std::move(runner), updates);
  *persistent_made = true;
  return runner;
}

void persistent_refuses_control(bool persistent_made) {
  if (persistent_made) {
    throw UsageError("live table updates: a persistent kernel already reads the device copy, which it would not see "
                     "change; use --gpu-mode async, graph or mapped");
  }
}

}  // namespace tandem::gpu
