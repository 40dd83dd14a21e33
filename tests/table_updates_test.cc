// gpu/table_updates.h on any machine: what a control stages and commits before a runner applies
// it, which device versions of a rebuilt table are kept while none is applied, and the controls'
// DeviceCopyHook (apps/table_control.h) when an upload fails or the GPU has failed (the GPU's side,
// applies included, is tested with the apps that use it: route_control_test, mac_control_test,
// fw_rule_control_test, dpi_control_live_test).
#include "gpu/table_updates.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "apps/table_control.h"
#include "gpu/gpu_runtime.h"

namespace tandem::gpu {
namespace {

using tandem::DeviceCopyHook;

TEST(DeviceTableUpdates, CommitMakesAVersionPendingAndNothingIsReadBeforeAnApply) {
  DeviceTableUpdates u;
  uint32_t block[4] = {1, 2, 3, 4};
  EXPECT_FALSE(u.pending());
  u.stage(reinterpret_cast<void*>(uintptr_t{0x1000}), block, sizeof block);
  EXPECT_FALSE(u.pending()) << "staged, not committed";
  u.commit(7);
  EXPECT_TRUE(u.pending());
  EXPECT_EQ(u.device_version(), 0u);
  EXPECT_EQ(u.versions_read(), (std::pair<uint64_t, uint64_t>{0, 0}));
  EXPECT_EQ(u.applies(), 0u);
}

// Without an apply the device reads the caller's version 0: of the versions published, only the
// newest is kept (it may be taken next); the others are freed at once, however many come.
TEST(DeviceTableVersions, WhileNoneIsAppliedOnlyTheNewestIsKept) {
  std::vector<int> alive(100, 0);  // before `versions`, whose buffers mark it when they go
  auto updates = std::make_shared<DeviceTableUpdates>();
  uint64_t root_on_device = 0;  // never written: no apply runs here
  DeviceTableVersions versions(updates, &root_on_device, sizeof root_on_device);
  for (uint64_t v = 1; v < alive.size(); ++v) {
    alive[v] = 1;
    std::shared_ptr<void> buffers(&alive[v], [](void* p) { *static_cast<int*>(p) = 0; });
    versions.publish(v * 3, UploadedVersion::of(v, buffers, 1000 + v), 10);
    ASSERT_EQ(versions.kept(), 1u) << "version " << v * 3;
    for (uint64_t k = 1; k <= v; ++k) ASSERT_EQ(alive[k], k == v ? 1 : 0) << "after version " << v * 3;
  }
  EXPECT_TRUE(updates->pending());
  EXPECT_EQ(root_on_device, 0u);
  EXPECT_EQ(updates->uploads(), 99u);
  EXPECT_EQ(updates->uploaded_bytes(), 99u * 1000 + 99 * 100 / 2);
  EXPECT_EQ(updates->upload_ns(), 990u);
}

// After a GPU failure nothing is kept for the device: what waits is dropped, and later batches
// stage nothing (a table's worth of blocks would otherwise wait for good).
TEST(DeviceTableUpdates, AnAbandonedCopyKeepsNothing) {
  DeviceTableUpdates u;
  uint32_t block[256] = {};
  u.stage(reinterpret_cast<void*>(uintptr_t{0x1000}), block, sizeof block);
  u.commit(1);
  EXPECT_TRUE(u.pending());
  u.abandon();
  EXPECT_FALSE(u.pending()) << "what waited was dropped";
  u.stage(reinterpret_cast<void*>(uintptr_t{0x2000}), block, sizeof block);
  u.commit(2);
  EXPECT_FALSE(u.pending());
  EXPECT_EQ(u.versions_read(), (std::pair<uint64_t, uint64_t>{0, 0})) << "no apply took anything";
  u.stage(reinterpret_cast<void*>(uintptr_t{0x3000}), block, sizeof block);
  u.commit(3);
  u.apply();  // touches no device: there is nothing to copy, and no device to copy to
  EXPECT_EQ(u.device_version(), 0u);
  EXPECT_EQ(u.applies(), 0u);
  EXPECT_EQ(u.blocks_copied(), 0u);
}

// Abandoning drops what was committed at once, not at the next commit.
TEST(DeviceTableUpdates, AbandoningDropsWhatWaits) {
  DeviceTableUpdates u(4);
  uint32_t block[256] = {};
  u.stage(reinterpret_cast<void*>(uintptr_t{0x1000}), block, sizeof block);
  u.commit(5);
  ASSERT_TRUE(u.pending());
  u.abandon();
  EXPECT_TRUE(u.abandoned());
  EXPECT_FALSE(u.pending());
  u.apply();
  EXPECT_EQ(u.device_version(), 4u) << "the version the copy was made from, and no other";
}

// A runner that records its submits (no device).
class CountingRunner final : public OffloadRunner {
 public:
  GpuMode mode() const override { return GpuMode::kAsync; }
  size_t capacity() const override { return 16; }
  int slots() const override { return 1; }
  size_t in_item_bytes() const override { return 4; }
  size_t out_item_bytes() const override { return 4; }
  void* in(int) override { return buf_; }
  void* out(int) override { return buf_; }
  void submit(int, size_t) override { ++submits; }
  void wait(int) override {}
  bool ready(int) override { return true; }
  int submits = 0;

 private:
  uint32_t buf_[16] = {};
};

// A runner whose copy is abandoned (by its own quiesce after a failure, or another's) stops
// submitting, so that the engine answers on the CPU; a new one on that copy is refused.
TEST(DeviceTableUpdates, NoBatchGoesToAnAbandonedCopy) {
  auto updates = std::make_shared<DeviceTableUpdates>();
  auto inner = std::make_unique<CountingRunner>();
  CountingRunner* counting = inner.get();
  std::unique_ptr<OffloadRunner> runner = with_table_updates(std::move(inner), updates);
  runner->submit(0, 4);
  EXPECT_EQ(counting->submits, 1);
  runner->quiesce();  // what an engine does after a failure
  EXPECT_TRUE(updates->abandoned());
  EXPECT_THROW(runner->submit(0, 4), GpuError);
  EXPECT_EQ(counting->submits, 1);
  EXPECT_THROW(with_table_updates(std::make_unique<CountingRunner>(), updates), GpuError);
}

// A root of another size than the runners read is refused before anything is committed.
TEST(DeviceTableVersions, ARootOfTheWrongSizeChangesNothing) {
  auto updates = std::make_shared<DeviceTableUpdates>(5);
  uint64_t root_on_device = 0;
  DeviceTableVersions versions(updates, &root_on_device, sizeof root_on_device);
  const uint32_t small = 1;
  EXPECT_THROW(versions.publish(6, UploadedVersion::of(small, nullptr, 0), 0), std::invalid_argument);
  EXPECT_FALSE(updates->pending());
  EXPECT_EQ(versions.kept(), 0u);
  EXPECT_EQ(updates->device_version(), 5u) << "the version the device copy was made from";
  EXPECT_EQ(updates->uploads(), 0u);
}

// After a GPU failure the device copy is abandoned; the control's hook then makes no copies.
TEST(DeviceTableUpdates, AnAbandonedCopyIsNotUploadedTo) {
  auto updates = std::make_shared<DeviceTableUpdates>();
  uint64_t root_on_device = 0;
  int uploads = 0;
  DeviceCopyHook<int> hook;
  hook.connect(updates, &root_on_device, sizeof root_on_device, [&](const int& t) {
    ++uploads;
    const uint64_t root = static_cast<uint64_t>(t);
    return UploadedVersion::of(root, nullptr, 8);
  });
  EXPECT_EQ(hook.publish(1, 1), "");
  EXPECT_EQ(uploads, 1);
  updates->abandon();
  EXPECT_EQ(hook.publish(2, 2), "");
  EXPECT_EQ(uploads, 1) << "no upload into a failed device";
  EXPECT_EQ(updates->uploads(), 1u);
}

// An upload that fails refuses the batch, naming why, and commits nothing.
TEST(DeviceTableUpdates, AFailedUploadRefusesTheBatch) {
  auto updates = std::make_shared<DeviceTableUpdates>();
  uint64_t root_on_device = 0;
  DeviceCopyHook<int> hook;
  hook.connect(updates, &root_on_device, sizeof root_on_device,
               [](const int&) -> UploadedVersion { throw std::runtime_error("out of device memory"); });
  EXPECT_EQ(hook.publish(1, 1), "not applied: the batch's tables could not be copied to the GPU (out of device memory)");
  EXPECT_FALSE(updates->pending());
  EXPECT_EQ(hook.kept(), 0u);
}

}  // namespace
}  // namespace tandem::gpu
