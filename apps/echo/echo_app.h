// Echo, the G-Opt paper's limit app: a packet goes to port X mod 4, X being the first 32-bit word
// (big-endian) after its transport header (UDP or TCP; after the IP header for other protocols).
// There is no table: what is left is the cost of receiving, parsing and transmitting a packet and,
// on the GPU path, of shipping a 4-byte key to the GPU and a port back.
//
// Dropped: frames that do not parse as IPv4/IPv6 (core/parse.h's reasons), a malformed or missing
// transport header (kBadL4), fewer than 4 payload bytes (kNoPayload).
#pragma once

#include <memory>

#include "apps/forward_app.h"
#include "apps/forward_app_impl.h"
#include "apps/echo/echo_core.h"
#include "gpu/gpu_factory.h"

namespace tandem::echo {

// A runner whose operation is echo_port (echo_gpu.cu registers it: gpu/gpu_factory.h). Throws
// gpu::GpuError without a GPU.
struct EchoPortRunnerTag;
using EchoPortRunnerFactory =
    gpu::GpuFactory<std::unique_ptr<gpu::OffloadRunner>(const gpu::OffloadOptions&), EchoPortRunnerTag>;
inline std::unique_ptr<gpu::OffloadRunner> make_echo_port_runner(const gpu::OffloadOptions& opts) {
  return EchoPortRunnerFactory::create(opts);
}

struct EchoTraits {
  using Key = uint32_t;
  using Item = uint32_t;
  static constexpr const char* kName = "echo";
  static const char* drop_reason_name(DropReason r) { return r == kNoPayload ? "no_payload" : nullptr; }

  size_t ports() const { return kPorts; }
  EchoCore frame_core() const { return {}; }
  // classify: the frame core's, called out of line (echo_app.cc) as the burst loops were measured.
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const;
  void prefetch(Key) const {}
  uint32_t lookup(Key x) const { return EchoCore{}.lookup(x); }
  void lookup_batch(const Key* keys, uint32_t* results, size_t n) const {
    for (size_t i = 0; i < n; ++i) results[i] = echo_port(keys[i]);
  }
  void to_item(Key k, Item* item) const { *item = k; }
  void lookup_items(const Item* items, uint32_t* results, size_t n) const { lookup_batch(items, results, n); }
  uint32_t lookup_item(Item k) const { return lookup(k); }
  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t result) const {
    return EchoCore{}.apply(frame, len, l3_off, result);
  }
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts) { return make_echo_port_runner(opts); }
  void build_reference() {}
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const;
};

using EchoApp = ForwardAppImpl<EchoTraits>;

}  // namespace tandem::echo
