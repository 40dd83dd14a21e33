// Live route updates for the ipv4 app's DIR-24-8 table (apps/table_control.h):
//   add PREFIX/LEN NEXTHOP    add a route, or change its next hop
//   del PREFIX/LEN            delete a route (its addresses fall back to the next shorter one)
// Two copies of the table (left-right): a batch goes into the copy no worker reads, which is then
// published; after a grace period the same batch goes into the other. Both copies take the same
// operations in the same order, so they stay equal, and each lookup sees one of them whole.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "apps/ipv4/dir24_8.h"
#include "apps/ipv4/fib_loader.h"
#include "apps/table_control.h"

namespace tandem::gpu {
class DeviceTableUpdates;
}

namespace tandem::ipv4 {

class RouteControl final : public PublishingControl {
 public:
  // `live` is the table the data path reads through `current` (which points at it now); the second
  // copy is built here from `fib`, the routes `live` was built from.
  RouteControl(Dir24_8& live, const Fib& fib, std::atomic<const Dir24_8*>& current);
  ~RouteControl() override;

  std::string syntax() const override { return "add PREFIX/LEN NEXTHOP | del PREFIX/LEN"; }
  std::vector<std::string> apply(const std::vector<std::string>& lines) override;
  // Runs f(the copy the data path reads now, its version) with no batch being applied meanwhile,
  // so that a device copy made from it is that version; `f` hands it over with set_device_copy.
  void with_table(const std::function<void(const Dir24_8&, uint64_t version)>& f);
  // The GPU offload path's device copy (tbl24 and tbl8 at these device addresses, the whole
  // tbl8 room): each batch stages the blocks it changed there before it is published (1 KiB
  // blocks: 256 tbl24 entries, or one tbl8 group). Called inside with_table().
  void set_device_copy(std::shared_ptr<gpu::DeviceTableUpdates> updates, uint32_t* tbl24, uint32_t* tbl8);
  bool reaches_gpu_offload() const override { return true; }
  const gpu::DeviceTableUpdates* device_copy() const override { return device_.get(); }

 private:
  struct Op {
    bool add = false;
    uint32_t prefix = 0;
    uint8_t len = 0;
    uint32_t next_hop = 0;
  };
  static bool parse(const std::string& line, Op* op, std::string* why);
  static std::string run(Dir24_8& t, const Op& op);
  void stage_device_blocks(const Dir24_8& t, const std::vector<const Op*>& ops, uint64_t version);

  std::mutex mu_;  // a batch being applied, or a device copy being made
  Dir24_8* copies_[2];
  std::unique_ptr<Dir24_8> second_;
  int active_ = 0;
  std::atomic<const Dir24_8*>& current_;
  std::shared_ptr<gpu::DeviceTableUpdates> device_;
  uint32_t* device_tbl24_ = nullptr;
  uint32_t* device_tbl8_ = nullptr;
};

}  // namespace tandem::ipv4
