// gpu/table_updates.h on any machine: what a control stages and commits before a runner applies
// it, and which device versions of a rebuilt table are kept while none is applied (the GPU's side,
// applies included, is tested with the apps that use it: route_control_test, mac_control_test,
// fw_rule_control_test, dpi_control_live_test).
#include "gpu/table_updates.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace tandem::gpu {
namespace {

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
  auto updates = std::make_shared<DeviceTableUpdates>();
  uint64_t root_on_device = 0;  // never written: no apply runs here
  DeviceTableVersions versions(updates, &root_on_device, sizeof root_on_device);
  std::vector<int> alive(100, 0);
  for (uint64_t v = 1; v < alive.size(); ++v) {
    alive[v] = 1;
    std::shared_ptr<void> buffers(&alive[v], [](void* p) { *static_cast<int*>(p) = 0; });
    versions.publish(v * 3, &v, buffers, 1000 + v, 10);
    ASSERT_EQ(versions.kept(), 1u) << "version " << v * 3;
    for (uint64_t k = 1; k <= v; ++k) ASSERT_EQ(alive[k], k == v ? 1 : 0) << "after version " << v * 3;
  }
  EXPECT_TRUE(updates->pending());
  EXPECT_EQ(root_on_device, 0u);
  EXPECT_EQ(updates->uploads(), 99u);
  EXPECT_EQ(updates->uploaded_bytes(), 99u * 1000 + 99 * 100 / 2);
  EXPECT_EQ(updates->upload_ns(), 990u);
}

}  // namespace
}  // namespace tandem::gpu
