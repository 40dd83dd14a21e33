// The GPU's ESP kernels against the CPU path (OpenSSL), frame for frame and byte for byte, for
// every suite on traffic of every size over many SAs: sealing cleartext, and opening ESP (tampered
// frames included) in batches over several slots; and the no-GPU error without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "apps/ipsec/esp_gpu.h"
#include "apps/ipsec/ipsec_app.h"
#include "apps/ipsec/sa_gen.h"
#include "io/traffic_gen.h"
#include "tests/test_util.h"

namespace tandem::ipsec {
namespace {

// Every frame of s through the GPU in batches of up to 700 frames over the runner's slots, and
// through the CPU app on a twin table: the same verdicts, lengths and bytes.
void expect_gpu_equals_cpu(EspGpu& g, SaTable& gpu_table, const IpsecApp& cpu, EspGpu::Op op, const PacketStore& s,
                           size_t max_bytes) {
  size_t next = 0, frames = 0;
  int slot = 0;
  while (next < s.size()) {
    std::vector<size_t> skipped;
    const size_t first = next;
    const EspPacked p = pack_esp_frames(g, slot, gpu_table, op, s, next, 700, max_bytes, &skipped);
    ASSERT_TRUE(skipped.empty());
    ASSERT_GT(p.frames, 0u);
    g.run(slot, op, p.frames, p.bytes);
    for (size_t k = 0; k < p.frames; ++k) {
      const size_t i = first + k;
      std::vector<uint8_t> want(s.frame(i), s.frame(i) + s.caplen[i]);
      want.resize(want.size() + kMaxEspGrowth);
      uint32_t len = s.caplen[i];
      const uint32_t v = cpu.process(want.data(), &len, static_cast<uint32_t>(want.size()));
      ASSERT_EQ(g.verdicts(slot)[k], v) << "frame " << i;
      if (Verdict::is_drop(v)) continue;
      ASSERT_EQ(g.out_lengths(slot)[k], len) << "frame " << i;
      ASSERT_EQ(std::memcmp(want.data(), g.out_bytes(slot) + g.offsets(slot)[k], len), 0) << "frame " << i;
    }
    frames += p.frames;
    next = p.next;
    slot = (slot + 1) % g.slots();
  }
  EXPECT_EQ(frames, s.size());
}

TEST(EspGpu, SealsAndOpensEveryFrameAsOpenSslDoes) {
  TANDEM_REQUIRE_GPU();
  for (Cipher c : {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305}) {
    SCOPED_TRACE(cipher_name(c));
    SaTable gpu_table(generated_sas(300, c, 9));
    SaTable cpu_table(generated_sas(300, c, 9));
    IpsecApp cpu(cpu_table);
    const size_t max_bytes = 700 * (1518 + kMaxEspGrowth + 16);
    auto g = EspGpu::create(gpu_table, 700, max_bytes, 2);
    const PacketStore out = generate_esp_traffic(gpu_table, parse_gen_spec("count=5000,dst=fib,size=imix,seed=4"), "out");
    expect_gpu_equals_cpu(*g, gpu_table, cpu, EspGpu::Op::kSeal, out, max_bytes);
    PacketStore in = generate_esp_traffic(gpu_table, parse_gen_spec("count=3000,dst=fib,size=imix,seed=5"), "in");
    for (size_t i = 7; i < in.size(); i += 97) in.bytes[in.offset[i] + in.caplen[i] - 1 - i % 20] ^= 0x10;  // tampered
    expect_gpu_equals_cpu(*g, gpu_table, cpu, EspGpu::Op::kOpen, in, max_bytes);
  }
}

TEST(EspGpu, WithoutAGpuCreateSaysSo) {
  if (gpu::available()) GTEST_SKIP() << "a GPU is usable here";
  SaTable table(generated_sas(2, Cipher::kAes128Gcm, 1));
  EXPECT_THROW(EspGpu::create(table, 16, 4096), gpu::GpuError);
}

}  // namespace
}  // namespace tandem::ipsec
