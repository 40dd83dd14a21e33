// The GPU's ESP seal kernel against the CPU path (OpenSSL), frame for frame and byte for byte, for
// every suite on IPv4 and IPv6 traffic of every size, many SAs; and the no-GPU error without one.
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

TEST(EspGpu, SealsEveryFrameAsOpenSslDoes) {
  TANDEM_REQUIRE_GPU();
  for (Cipher c : {Cipher::kAes128Cbc, Cipher::kAes128Gcm, Cipher::kAes256Gcm, Cipher::kChacha20Poly1305}) {
    SCOPED_TRACE(cipher_name(c));
    SaTable table(generated_sas(300, c, 9));
    SaTable cpu_table(generated_sas(300, c, 9));
    IpsecApp cpu(cpu_table);
    const PacketStore s = generate_esp_traffic(table, parse_gen_spec("count=5000,dst=fib,size=imix,seed=4"), "out");
    size_t bytes = 0;
    for (size_t i = 0; i < s.size(); ++i) bytes += (s.caplen[i] + kMaxEspGrowth + 15) / 16 * 16;
    auto g = EspGpu::create(table, s.size(), bytes);
    size_t used = 0;
    std::vector<std::vector<uint8_t>> want(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      ParsedPacket pp;
      ASSERT_EQ(parse_packet(s.frame(i), s.caplen[i], &pp), DropReason::kNone);
      const uint32_t sa = table.select(pp.tuple);
      ASSERT_NE(sa, kNoSa);
      ASSERT_TRUE(table.next_seq(sa, &g->seqs()[i]));
      g->sas()[i] = sa;
      g->offsets()[i] = static_cast<uint32_t>(used);
      g->lengths()[i] = s.caplen[i];
      std::memcpy(g->bytes() + used, s.frame(i), s.caplen[i]);
      used += (s.caplen[i] + kMaxEspGrowth + 15) / 16 * 16;
      want[i].assign(s.frame(i), s.frame(i) + s.caplen[i]);
      want[i].resize(s.caplen[i] + kMaxEspGrowth);
      uint32_t len = s.caplen[i];
      ASSERT_EQ(cpu.process(want[i].data(), &len, static_cast<uint32_t>(want[i].size())), Verdict::port(kPortTunnel));
      want[i].resize(len);
    }
    g->seal(s.size(), used);
    for (size_t i = 0; i < s.size(); ++i) {
      ASSERT_EQ(g->verdicts()[i], Verdict::port(kPortTunnel)) << i;
      ASSERT_EQ(g->out_lengths()[i], want[i].size()) << i;
      ASSERT_TRUE(std::equal(want[i].begin(), want[i].end(), g->out_bytes() + g->offsets()[i])) << "frame " << i;
    }
  }
}

TEST(EspGpu, WithoutAGpuCreateSaysSo) {
  if (gpu::available()) GTEST_SKIP() << "a GPU is usable here";
  SaTable table(generated_sas(2, Cipher::kAes128Gcm, 1));
  EXPECT_THROW(EspGpu::create(table, 16, 4096), gpu::GpuError);
}

}  // namespace
}  // namespace tandem::ipsec
