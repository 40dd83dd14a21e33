// Live SA updates for the ipsec app (apps/table_control.h):
//   add SA-LINE         a new SA: SA-LINE is one line of an SA file (sa_file.h), e.g.
//                       add dir=in spi=0x2001 src=198.51.100.1 dst=192.0.2.1 cipher=aes-128-gcm key=HEX
//   del in|out SPI      removes the inbound or outbound SA with that SPI (an SA is known by its
//                       direction and SPI: an SA file has each pair once)
// To change an SA's keys or selector, delete it and add it again (both lines may go in one batch).
//
// What the workers share with this thread: the SAs and their per-packet state (sequence numbers,
// replay windows) stay in their slots of the SaTable for as long as they exist, so a batch never
// copies state that workers are changing; what a batch changes is the index from selectors and
// SPIs to slots, of which there are two copies (left-right, as RouteControl's tables): the batch is
// applied to the copy no worker reads, that copy is published, and once every worker has passed a
// quiescent state (core/rcu.h) the batch is applied to the other copy. A lookup thus sees the SA
// set before or after a batch, never in between.
//
// An added SA goes into a free slot with fresh state (numbers from 1, an empty window), written
// before the index that names it is published. A removed SA's slot is unlinked from both copies,
// and only then, when no worker can hold it any more, its keys are wiped: the SaTable's copy, and
// every copy made from them (the workers' OpenSSL contexts and intel-ipsec-mb key schedules, which
// `forget` drops); the slot is then free for a later batch.
//
// The resident GPU path's copy (apps/ipsec/esp_resident.cu), when a runner is connected, takes
// each batch before the host publishes it: the added SAs with fresh state, then a new index that
// its batches read from their next start, and the batch waits until no GPU batch reads the index
// before it; a removed SA's device copy is wiped with the host's. A batch the device cannot take
// (no room for an added SA's replay window on the GPU, a failed copy) is undone and refused whole.
//
// Refused lines (each names the SPI or the field at fault, never a key): a malformed SA, an SPI
// there is already in that direction, an outbound AEAD SA under the key of another outbound SA
// there is (its IVs would repeat; a key that comes back after its SA was removed would repeat them
// too, which only whoever makes the keys can rule out), no free slot (--sa-room), an unknown SA
// on del. A refused line changes nothing and does not stop the rest of the batch.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "apps/ipsec/sa_table.h"
#include "apps/table_control.h"

namespace tandem::ipsec {

// The SAs' copy on the GPU (the resident path), kept in step with a control's batches.
class SaDeviceCopy {
 public:
  virtual ~SaDeviceCopy() = default;
  // Before a batch is published on the host: the slots in `added` (taken by the batch; no index
  // names them yet) are copied with their fresh state, then the device's index becomes the SAs in
  // `linked` (every SA there is after the batch); returns once no GPU batch reads an older index.
  // "" when done (or when the device copy no longer runs: the GPU failed or the run ended), else
  // why not, with nothing of the batch in any index the GPU reads.
  virtual std::string publish(const std::vector<uint32_t>& linked, const std::vector<uint32_t>& added,
                              ResidentCopyStats& stats) = 0;
  // A removed SA's slot, which no GPU batch reads any more: its keys are wiped on the device.
  virtual void forget(uint32_t slot) = 0;
};

class SaControl final : public PublishingControl {
 public:
  // `table` is what the workers read (its index published through table.current_index()); the
  // second copy of the index is made here. forget(i): drops every copy of slot i's keys kept
  // outside the table; called when no worker can use slot i.
  SaControl(SaTable& table, std::function<void(uint32_t)> forget);
  ~SaControl() override;

  std::string syntax() const override { return "add SA-LINE (the fields of an SA file line) | del in|out SPI"; }
  std::vector<std::string> apply(const std::vector<std::string>& lines) override;
  // Whether both copies of the index are equal (tests; between batches).
  bool copies_equal() const { return *copies_[0] == *copies_[1]; }

  // The GPU's copy to keep in step from the next batch on (null: none any more). `start` is called
  // first with the SAs there are (slots), between batches, to make the copy from. At most one is
  // connected (std::logic_error for a second).
  void connect_device(SaDeviceCopy* device, const std::function<void(const std::vector<uint32_t>& linked)>& start);
  bool reaches_gpu_resident() const override { return true; }
  const ResidentCopyStats* resident_copy() const override { return &device_stats_; }

 private:
  struct Op {
    bool add = false;
    Sa sa;  // add
    SaDir dir = SaDir::kOut;  // del
    uint32_t spi = 0;
  };
  static bool parse(const std::string& line, Op* op, std::string* why);
  static uint64_t id(SaDir dir, uint32_t spi) { return uint64_t{dir == SaDir::kIn} << 32 | spi; }
  // Checks op against the SAs there are (with the batch's earlier lines), takes its slot and
  // applies it to `index`; "" with *slot, or why not.
  std::string run(SaIndex& index, Op& op, uint32_t* slot);
  // Takes back the index operations `done` (in order; true: link) from `index`, latest first: the
  // table, the index and the bookkeeping as before them.
  void undo(SaIndex& index, const std::vector<std::pair<bool, uint32_t>>& done);
  std::vector<uint32_t> linked() const;

  SaTable& table_;
  std::function<void(uint32_t)> forget_;
  SaIndex* copies_[2];
  std::unique_ptr<SaIndex> second_;
  int active_ = 0;
  std::unordered_map<uint64_t, uint32_t> slot_of_;  // id(dir, spi) -> slot, for the SAs there are
  AeadKeys aead_;
  std::mutex mu_;  // a batch, or a device copy connecting
  SaDeviceCopy* device_ = nullptr;
  ResidentCopyStats device_stats_;
};

}  // namespace tandem::ipsec
