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

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tandem::gpu {
class DeviceTableUpdates;
}

namespace tandem {

class Rcu;

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
  // (gpu/table_updates.h); else live updates run on the CPU paths only.
  virtual bool reaches_gpu_offload() const { return false; }
  // The device copy's updates (what was copied and how long it took), where there is one.
  virtual const gpu::DeviceTableUpdates* device_copy() const { return nullptr; }
};

// The GPU side of a control whose batches build new tables whole (the firewall's rules, the IDS
// rules): the app sets an upload that copies a batch's tables to the device and stages them
// (gpu::DeviceTableVersions); the control calls publish() before it publishes them on the host.
template <class Tables>
class DeviceCopyHook {
 public:
  // upload(tables, version): throws when the device copy cannot be made.
  using Upload = std::function<void(const Tables&, uint64_t version)>;
  void set(Upload upload, const gpu::DeviceTableUpdates* updates) {
    upload_ = std::move(upload);
    updates_ = updates;
  }
  // "" when the device has a copy of `tables` as `version` (or there is no device copy), else why
  // not (the batch is then not applied).
  std::string publish(const Tables& tables, uint64_t version) const {
    if (!upload_) return "";
    try {
      upload_(tables, version);
    } catch (const std::exception& e) {
      return std::string("not applied: the batch's tables could not be copied to the GPU (") + e.what() + ")";
    }
    return "";
  }
  const gpu::DeviceTableUpdates* updates() const { return updates_; }

 private:
  Upload upload_;
  const gpu::DeviceTableUpdates* updates_ = nullptr;
};

}  // namespace tandem
