// How fast is a machine's core on the app's own work, with no receive, transmit or framework? The
// echo app's CPU paths (parse, classify, lookup, apply, counting) over one burst of 32 valid 64 B
// UDP frames already in cells, repeated (echo does not change them). A probe run by hand, to set a
// machine's per-core figures beside another's, not part of the product; from the repository root:
//   g++ -std=c++20 -O3 [-march=native] -I. -o probe bench/probes/echo_app_probe.cc \
//       apps/echo/echo_app.cc core/*.cc -lz && taskset -c 2 ./probe
#include <chrono>
#include <cstdio>
#include <cstring>
#include "apps/echo/echo_app.h"
#include "core/checksum.h"
using namespace tandem;
int main() {
  PacketPool pool(512, 2048);
  PacketBatch b;
  uint64_t x = 12345;
  const uint32_t n = 32;
  pool.alloc_bulk(b.cell.data(), n);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t* f = pool.data(b.cell[i]);
    memset(f, 0, 64);
    f[12] = 0x08; f[13] = 0x00;
    uint8_t* ip = f + 14;
    ip[0] = 0x45; ip[3] = 46; ip[8] = 64; ip[9] = 17;
    for (int k = 0; k < 8; ++k) { x = x * 6364136223846793005ULL + 1442695040888963407ULL; ip[12 + k] = x >> 56; }
    uint16_t c = ipv4_header_checksum(ip, 20); ip[10] = c >> 8; ip[11] = c & 0xff;
    uint8_t* u = ip + 20; u[0] = 0x12; u[1] = 0x34; u[2] = 0x56; u[3] = i; u[5] = 26;
    b.len[i] = 60; b.wire_len[i] = 60;
  }
  b.size = n;
  echo::EchoApp app;
  Counters c(app.ports());
  for (int rep = 0; rep < 3; ++rep) {
    const int R = 2000000;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < R; ++r) app.forward_scalar(pool, b, c);
    auto t1 = std::chrono::steady_clock::now();
    for (int r = 0; r < R; ++r) app.forward_batched(pool, b, c);
    auto t2 = std::chrono::steady_clock::now();
    const double pk = double(R) * n;
    std::printf("scalar %.2f ns, batched %.2f ns per packet (%llu)\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / pk,
                std::chrono::duration<double, std::nano>(t2 - t1).count() / pk, (unsigned long long)c.tx_packets & 1);
  }
}
// The app's GPU parts are not linked: their one entry point the CPU paths reference.
namespace tandem::gpu {
bool available(std::string*) { return false; }
}  // namespace tandem::gpu
