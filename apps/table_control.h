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
#include <string>
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

}  // namespace tandem
