// Live updates of a device table that offload runners read (`tandem run --control` on the GPU).
//
// The control thread changes the host table and stages the device blocks it changed: copies of
// fixed-size blocks of the table as the published host copy holds them, keyed by their device
// address, a later copy of a block replacing an earlier one (so what waits is bounded by the
// table's size, however many updates come while no batch is sent). commit() makes what was staged
// one version. The thread that submits batches applies committed versions before its next submit:
// it waits until the device has finished the batches in flight (which read the table as it was),
// copies the blocks, then launches. A batch therefore reads one whole version, never a
// half-applied one, and the version it reads is at least every version committed before its
// packets were classified, since commit() comes before the host copy is published.
//
// Runners that launch on their own (the persistent kernel) cannot be held between batches this
// way: with_table_updates() refuses them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "gpu/offload.h"

namespace tandem::gpu {

class DeviceTableUpdates {
 public:
  // `version`: the version of the table the device copy was made from.
  explicit DeviceTableUpdates(uint64_t version = 0)
      : committed_version_(version), taken_version_(version), device_version_(version) {}

  // Control thread: `bytes` at host `src` go to device address `device_dst` with the next commit.
  // Blocks are the table's fixed-size aligned pieces: two blocks never overlap unless they are
  // the same block.
  void stage(void* device_dst, const void* src, size_t bytes);
  // Control thread: what was staged since the last commit becomes `version`, applied as one.
  void commit(uint64_t version);
  // The submitting thread: true when a committed version waits (one relaxed load).
  bool pending() const { return pending_.load(std::memory_order_acquire); }
  // The submitting thread: waits for the device's work in flight, copies every committed block
  // (contiguous blocks in one copy) and waits until they are in place. Throws GpuError.
  void apply();
  // After a GPU failure (a runner quiesced: the engine runs on the CPU from then on): nothing is
  // staged, kept or applied any more, and controls stop making device copies.
  void abandon();
  bool abandoned() const { return abandoned_.load(std::memory_order_acquire); }
  // Runners of one table submit under this lock, so that one's apply() (which waits for every
  // batch on the device) never runs while another launches.
  std::mutex& submit_lock() { return submit_mu_; }

  // The versions batches may read now: the device's and the one an apply() has taken (being
  // copied; the device's once no apply() runs). Either may be stale-low, never high.
  std::pair<uint64_t, uint64_t> versions_read();

  // The version the device holds (at first the one the copy was made from); applies, blocks and
  // bytes copied so far,
  // and the time the submitting thread spent in apply() (waiting for the device, then copying).
  uint64_t device_version() const { return device_version_.load(std::memory_order_acquire); }
  uint64_t applies() const { return applies_.load(std::memory_order_relaxed); }
  uint64_t blocks_copied() const { return blocks_copied_.load(std::memory_order_relaxed); }
  uint64_t bytes_copied() const { return bytes_copied_.load(std::memory_order_relaxed); }
  uint64_t apply_ns() const { return apply_ns_.load(std::memory_order_relaxed); }
  // Tables a batch rebuilds are uploaded whole by the control thread (DeviceTableVersions), not in
  // apply(): the versions uploaded, their bytes, and the control thread's time uploading them.
  void count_upload(uint64_t bytes, uint64_t ns);
  uint64_t uploads() const { return uploads_.load(std::memory_order_relaxed); }
  uint64_t uploaded_bytes() const { return uploaded_bytes_.load(std::memory_order_relaxed); }
  uint64_t upload_ns() const { return upload_ns_.load(std::memory_order_relaxed); }
 private:
  using Blocks = std::map<uintptr_t, std::vector<uint8_t>>;
  static void merge(Blocks& into, Blocks& from);

  std::mutex mu_;
  std::mutex submit_mu_;
  Blocks staged_;     // control thread only
  Blocks committed_;  // under mu_
  uint64_t committed_version_ = 0;
  uint64_t taken_version_ = 0;  // under mu_
  std::atomic<bool> pending_{false};
  std::atomic<bool> abandoned_{false};
  std::atomic<uint64_t> device_version_{0};
  std::atomic<uint64_t> applies_{0};
  std::atomic<uint64_t> apply_ns_{0};
  std::atomic<uint64_t> blocks_copied_{0};
  std::atomic<uint64_t> bytes_copied_{0};
  std::atomic<uint64_t> uploads_{0};
  std::atomic<uint64_t> uploaded_bytes_{0};
  std::atomic<uint64_t> upload_ns_{0};
};

// One version of a table a batch rebuilds whole, on the device: its root's bytes (what runners
// read at the root's address), what owns its device memory, and that memory's size.
struct UploadedVersion {
  std::vector<uint8_t> root;
  std::shared_ptr<void> buffers;
  uint64_t bytes = 0;

  template <class Root>
  static UploadedVersion of(const Root& root, std::shared_ptr<void> buffers, uint64_t bytes) {
    const auto* p = reinterpret_cast<const uint8_t*>(&root);
    return {std::vector<uint8_t>(p, p + sizeof(Root)), std::move(buffers), bytes};
  }
};

// A device table that each batch rebuilds whole (a classifier's tree, an automaton): each version
// lives in device buffers of its own, and runners read the version's root (its pointers and
// sizes, a few dozen bytes) at one device address, which `updates` replaces between batches as a
// block of its own. A version's buffers are freed once no batch can read them: the device holds
// a later version and no apply() is copying this one's root. So at most three are kept, whatever
// the rate of batches: the one the device reads, one being applied, and the newest (a version
// replaced before any apply() took it is never read, and is freed at the next publish).
class DeviceTableVersions {
 public:
  // Runners read `root_bytes` at `device_root`; the version there now is the caller's.
  DeviceTableVersions(std::shared_ptr<DeviceTableUpdates> updates, void* device_root, size_t root_bytes);
  // Control thread, before the host copy of `version` is published: from `version` on, runners
  // read `v.root`, which points into `v.buffers` (uploaded in `upload_ns`, which the updates'
  // figures count). Throws (bad_alloc, invalid_argument for a root of the wrong size) before
  // anything is committed, never after.
  void publish(uint64_t version, UploadedVersion v, uint64_t upload_ns);
  // Versions whose buffers are kept (tests).
  size_t kept() const { return kept_.size(); }
  DeviceTableUpdates& updates() const { return *updates_; }

 private:
  std::shared_ptr<DeviceTableUpdates> updates_;
  void* device_root_;
  size_t root_bytes_;
  std::vector<std::pair<uint64_t, std::shared_ptr<void>>> kept_;  // by version, increasing
};

// `runner`, applying `updates` before each submit. Throws GpuError for a persistent runner, and
// for a copy abandoned after a GPU failure (it no longer follows the updates).
std::unique_ptr<OffloadRunner> with_table_updates(std::unique_ptr<OffloadRunner> runner,
                                                  std::shared_ptr<DeviceTableUpdates> updates);

// What an app whose live updates reach its device copy does for a new runner: before making it,
// persistent_refused_with_control() refuses a persistent one when a control is there
// (UsageError); after, runner_for_updates() wraps it (with_table_updates), except a persistent
// one, which is returned as it is and recorded in *persistent_made, so that
// persistent_refuses_control() refuses a control after it.
void persistent_refused_with_control(GpuMode mode, bool has_control);
std::unique_ptr<OffloadRunner> runner_for_updates(std::unique_ptr<OffloadRunner> runner,
                                                  const std::shared_ptr<DeviceTableUpdates>& updates,
                                                  bool* persistent_made);
// Throws UsageError when a persistent runner was made (its kernel would not see updates).
void persistent_refuses_control(bool persistent_made);

}  // namespace tandem::gpu
