// Live updates of an app's table while it forwards (`tandem run --control SOCKET`, `tandem ctl`).
// An app that takes them returns a TableControl from ForwardApp::table_control(); commands come
// as text lines in the app's own syntax, in batches, from one control thread.
//
// What the data path sees: every batch as a whole or not at all. Apps keep two copies of the
// table (left-right): a batch is applied to the copy no worker reads, that copy is published, and
// once every worker has passed a quiescent state (core/rcu.h) the batch is applied to the other
// copy too. A lookup therefore never sees a half-applied batch, and no memory a reader may still
// hold is changed under it.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/rcu.h"
#include "gpu/gpu_runtime.h"
#include "gpu/table_updates.h"

namespace tandem {

// What a control's batches cost a device copy that the resident path's kernel reads while it runs
// (the figures `tandem run` reports): versions published, bytes uploaded and the control thread's
// time uploading them, and its time waiting until no GPU batch read the version before.
struct ResidentCopyStats {
  std::atomic<uint64_t> versions{0}, bytes{0}, upload_ns{0}, wait_ns{0};
  std::atomic<bool> abandoned{false};  // the GPU failed or the run ended: later batches reach the CPU's copy only
};

class TableControl {
 public:
  virtual ~TableControl() = default;
  // The commands, for help and error messages.
  virtual std::string syntax() const = 0;
  // The workers whose grace periods the control waits for (set before they start; null: none).
  virtual void set_rcu(Rcu* rcu) = 0;
  // Applies the lines in order as one batch; returns one entry per line: "" when applied, else
  // why not (a bad line or a route that is not there changes nothing and does not stop the rest).
  virtual std::vector<std::string> apply(const std::vector<std::string>& lines) = 0;
  // Updates published so far (each applied line counts one).
  virtual uint64_t version() const = 0;
  // True when the updates also reach the GPU offload path's device copy of the table
  // (gpu/table_updates.h: changed blocks copied between batches, or tables a batch rebuilds
  // uploaded whole and their root replaced between batches); else live updates run on the CPU
  // paths only.
  virtual bool reaches_gpu_offload() const { return false; }
  // The device copy's updates (what was copied and how long it took), where there is one.
  virtual const gpu::DeviceTableUpdates* device_copy() const { return nullptr; }
  // True when the updates also reach the resident path's device copy (its persistent kernel reads
  // each batch's version as it starts the batch), and that copy's figures.
  virtual bool reaches_gpu_resident() const { return false; }
  virtual const ResidentCopyStats* resident_copy() const { return nullptr; }
};

// What every app's control shares: the version bookkeeping that tests check packets against, and
// the workers' grace periods.
class PublishingControl : public TableControl {
 public:
  void set_rcu(Rcu* rcu) override { rcu_ = rcu; }
  uint64_t version() const override { return version_.load(std::memory_order_acquire); }
  // The version a lookup may see at most now: a batch being published counts already. A lookup
  // done after reading version() and before reading publishing() saw a table of a version in
  // between (what tests check every packet against).
  uint64_t publishing() const { return publishing_.load(std::memory_order_acquire); }

 protected:
  // The version after a batch of `applied` lines.
  uint64_t next_version(uint64_t applied) const { return version_.load(std::memory_order_relaxed) + applied; }
  // publishing() becomes `next` before anything of that version can be read: a control that
  // commits a device copy before publish() announces the version first (a batch refused after
  // that leaves publishing() ahead, which an upper bound may be).
  void announce(uint64_t next) { publishing_.store(next, std::memory_order_seq_cst); }
  // Publishes version `next`: publishing() first, then `store()` (what makes the data path read
  // the batch: a device copy's commit, then the pointer it loads), then version().
  template <class Store>
  void publish(uint64_t next, Store&& store) {
    announce(next);
    store();
    version_.store(next, std::memory_order_release);
  }
  // Returns once no worker holds anything it loaded before the last publish (a grace period).
  void wait_for_readers() const {
    if (rcu_) rcu_->synchronize();
  }

 private:
  Rcu* rcu_ = nullptr;
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> publishing_{0};
};

// The GPU side of a control whose batches build new tables whole (the firewall's rules, the IDS
// rules): connect() gives it the offload runners' device root and an upload that copies a batch's
// tables to the device; the control calls publish() with each batch's tables before it publishes
// them on the host, and the root of the new version replaces the old one between GPU batches
// (gpu::DeviceTableVersions).
template <class Tables>
class DeviceCopyHook {
 public:
  // Copies `tables` into device buffers of their own; throws when it cannot (device memory).
  using Upload = std::function<gpu::UploadedVersion(const Tables&)>;
  void connect(std::shared_ptr<gpu::DeviceTableUpdates> updates, void* device_root, size_t root_bytes, Upload upload) {
    versions_ = std::make_unique<gpu::DeviceTableVersions>(std::move(updates), device_root, root_bytes);
    upload_ = std::move(upload);
  }
  // "" when the device has a copy of `tables` as `version` (or needs none: not connected, or the
  // GPU failed and the engine runs on the CPU), else why not (the batch is then not applied;
  // nothing of it reached the device).
  std::string publish(const Tables& tables, uint64_t version) {
    if (!versions_ || versions_->updates().abandoned()) return "";
    try {
      const uint64_t t0 = now_ns();
      gpu::UploadedVersion v = upload_(tables);
      versions_->publish(version, std::move(v), now_ns() - t0);
    } catch (const std::exception& e) {
      // A failed device (a fault the engine may not have seen yet) makes every later GPU batch
      // fail too, and the engine then answers them on the CPU, from the host copies: the batch
      // applies there. Anything else (device memory) refuses the batch.
      if (gpu::device_failed()) {
        versions_->updates().abandon();
        return "";
      }
      return std::string("not applied: the batch's tables could not be copied to the GPU (") + e.what() + ")";
    }
    return "";
  }
  const gpu::DeviceTableUpdates* updates() const { return versions_ ? &versions_->updates() : nullptr; }
  // Device versions kept (tests).
  size_t kept() const { return versions_ ? versions_->kept() : 0; }

 private:
  std::unique_ptr<gpu::DeviceTableVersions> versions_;
  Upload upload_;
};

}  // namespace tandem
