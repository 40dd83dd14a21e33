// Every GPU part registers its implementation (gpu/gpu_factory.h) in a build with CUDA, and none
// in a build without: a part left out by the link (a library not linked whole) shows up here, on
// machines without a GPU too.
#include <gtest/gtest.h>

#include "apps/acl/acl_gpu.h"
#include "apps/crypto/digest_gpu.h"
#include "apps/dpi/dpi_gpu.h"
#include "apps/echo/echo_app.h"
#include "apps/fwrouter/fw_router_app.h"
#include "apps/fwrouter/fw_router_gpu.h"
#include "apps/ipv4/ipv4_app.h"
#include "apps/ipv4/ipv4_gpu.h"
#include "apps/ipv6/ipv6_app.h"
#include "apps/ipv6/ipv6_gpu.h"
#include "apps/l2/l2_app.h"
#include "apps/l2/l2_gpu.h"
#include "apps/ndn/ndn_app.h"
#include "apps/ndn/ndn_gpu.h"
#include "bench/variants/fw_router_plans.h"
#include "bench/variants/ipv4_gpu_variants.h"

namespace tandem {
namespace {

#ifdef TANDEM_HAVE_CUDA
constexpr bool kWithCuda = true;
#else
constexpr bool kWithCuda = false;
#endif

TEST(GpuParts, RegisteredExactlyWithCuda) {
  EXPECT_EQ(ipv4::Ipv4GpuTable::Factory::registered(), kWithCuda);
  EXPECT_EQ(ipv6::Ipv6GpuTable::Factory::registered(), kWithCuda);
  EXPECT_EQ(l2::L2GpuTable::Factory::registered(), kWithCuda);
  EXPECT_EQ(ndn::NdnGpuTable::Factory::registered(), kWithCuda);
  EXPECT_EQ(acl::AclGpuTable::Factory::registered(), kWithCuda);
  EXPECT_EQ(fwrouter::FwRouterGpu::Factory::registered(), kWithCuda);
  EXPECT_EQ(dpi::AhoCorasickGpu::Factory::registered(), kWithCuda);
  EXPECT_EQ(echo::EchoPortRunnerFactory::registered(), kWithCuda);
  EXPECT_EQ(crypto::DigestGpu::Factory::registered(), kWithCuda);
  // Every app's frame core on the whole-frame runner (apps/frame_core.h).
  EXPECT_EQ(gpu::FrameRunnerFactory<echo::EchoCore>::registered(), kWithCuda);
  EXPECT_EQ(gpu::FrameRunnerFactory<ipv4::Ipv4FrameCore>::registered(), kWithCuda);
  EXPECT_EQ(gpu::FrameRunnerFactory<ipv6::Ipv6FrameCore>::registered(), kWithCuda);
  EXPECT_EQ(gpu::FrameRunnerFactory<l2::L2FrameCore>::registered(), kWithCuda);
  EXPECT_EQ(gpu::FrameRunnerFactory<ndn::NdnFrameCore>::registered(), kWithCuda);
  EXPECT_EQ(gpu::FrameRunnerFactory<fwrouter::FwRouterFrameCore>::registered(), kWithCuda);
  // The benchmarks' GPU variants (bench/variants).
  EXPECT_EQ(ipv4::Ipv4GpuVariants::Factory::registered(), kWithCuda);
  EXPECT_EQ(fwrouter::FwRouterGpuPlans::Factory::registered(), kWithCuda);
}

TEST(GpuParts, WithoutCudaCreatingOneIsTheNoGpuError) {
  if (kWithCuda) GTEST_SKIP() << "this build has CUDA";
  const ipv4::Dir24_8 d(1);
  try {
    ipv4::Ipv4GpuTable::create(d);
    FAIL() << "created a GPU table without CUDA";
  } catch (const gpu::GpuError& e) {
    EXPECT_STREQ(e.what(), "no GPU: this build of Tandem has no CUDA support");
  }
  EXPECT_THROW(echo::make_echo_port_runner(gpu::OffloadOptions{}), gpu::GpuError);
}

}  // namespace
}  // namespace tandem
