// Live updates of the l2 app's MAC table (apps/table_control.h):
//   add MAC PORT    bind a unicast MAC to a port (a new entry, or a new port for a known MAC)
//   del MAC         remove an entry (frames to that MAC are flooded again)
// MAC and PORT as the table files write them (l2_loader.h): aa:bb:cc:dd:ee:ff, 0..65534. A group
// (multicast/broadcast) MAC is refused, as the loader refuses it: it is flooded without a lookup.
//
// Two copies of the table (left-right, as ipv4's RouteControl): a batch goes into the copy no
// worker reads, which is then published; after a grace period the same batch goes into the other.
// The second copy starts as a clone of the first, slot for slot (MacTable::clone), and an insert
// or erase depends only on the slots, so both copies take the same operations with the same
// outcomes and stay equal slot for slot. A MAC that does not fit (no free slot within a bounded
// cuckoo path: MacTable::Status::kFull) fails on both, which it leaves unchanged; its line gets
// the error and the rest of the batch is applied.
//
// Memory: a second table as large as the first (MacTable::memory_bytes()).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "apps/l2/mac_table.h"
#include "apps/table_control.h"

namespace tandem::gpu {
class DeviceTableUpdates;
}

namespace tandem::l2 {

class MacControl final : public PublishingControl {
 public:
  // `live` is the table the data path reads through `current` (which points at it now); the
  // second copy is cloned from it.
  MacControl(MacTable& live, std::atomic<const MacTable*>& current);
  ~MacControl() override;

  std::string syntax() const override { return "add MAC PORT | del MAC"; }
  std::vector<std::string> apply(const std::vector<std::string>& lines) override;
  // Whether the two copies hold the same entries in the same slots (on the control thread,
  // between batches; for tests).
  bool copies_equal() const;
  // Runs f(the copy the data path reads now, its version) with no batch being applied meanwhile,
  // so that a device copy made from it is that version; `f` hands it over with set_device_copy.
  void with_table(const std::function<void(const MacTable&, uint64_t version)>& f);
  // The GPU offload path's device copy of the slots (at this device address): each batch stages
  // the 1 KiB blocks (128 slots) it wrote there before it is published. Called inside with_table().
  void set_device_copy(std::shared_ptr<gpu::DeviceTableUpdates> updates, uint64_t* slots);
  bool reaches_gpu_offload() const override { return true; }
  const gpu::DeviceTableUpdates* device_copy() const override { return device_.get(); }

 private:
  struct Op {
    bool add = false;
    uint64_t mac = 0;
    uint32_t port = 0;
  };
  static bool parse(const std::string& line, Op* op, std::string* why);
  static std::string run(MacTable& t, const Op& op);
  void stage_device_blocks(const MacTable& t, uint64_t version);

  std::mutex mu_;  // a batch being applied, or a device copy being made
  std::shared_ptr<gpu::DeviceTableUpdates> device_;
  uint64_t* device_slots_ = nullptr;
  std::vector<uint64_t> written_;  // slots the batch wrote in the standby copy
  MacTable* copies_[2];
  std::unique_ptr<MacTable> second_;
  int active_ = 0;
  std::atomic<const MacTable*>& current_;
};

}  // namespace tandem::l2
