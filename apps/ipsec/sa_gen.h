// Generated SAs and traffic for the ipsec app: tests, benchmarks and `--sa-gen`.
//
// generated_sas(n) makes n connections as Koromilas et al. run them, an SA pair each: outbound SA
// k protects 10.0.0.0 + k + 1 -> 172.16.0.0 + k + 1 (host selectors) into the tunnel
// 192.0.2.1 -> 198.51.100.1 with SPI 0x10000 + k; inbound SA k takes SPI 0x20000 + k from
// 198.51.100.1 and delivers 172.16.0.0 + k + 1 -> 10.0.0.0 + k + 1. Keys come from a seeded
// generator: test keys, never for real traffic.
//
// generate_esp_traffic makes the app's input: "out", cleartext packets the outbound SAs select
// (dst=fib: each flow inside a random SA's selector; uniform: random addresses, mostly bypassed);
// "in", ESP packets for the inbound SAs, encrypted by a peer that mirrors them (its outbound SA for
// each inbound one: same SPI, keys and endpoints), from sequence number 1; "both", the two
// interleaved. The spec's size is the cleartext frame's.
#pragma once

#include <cstdint>
#include <string>

#include "apps/ipsec/sa_file.h"
#include "apps/ipsec/sa_table.h"
#include "io/packet_store.h"
#include "io/traffic_gen.h"

namespace tandem::ipsec {

inline constexpr uint64_t kMaxGeneratedSas = 1u << 20;

// The cipher called `name` (cipher_name's spelling); throws UsageError for another.
Cipher cipher_by_name(const std::string& name);

// n SA pairs (1 <= n <= kMaxGeneratedSas); the path is "generated".
SaFile generated_sas(uint64_t n, Cipher cipher, uint64_t seed);

// One SA as an SA file line (keys in hex: write it only to files meant to hold keys).
std::string format_sa_line(const Sa& sa);

// The outbound SAs a peer uses to send to `inbound`'s SAs.
SaFile mirrored_sas(const SaTable& inbound);

// Throws std::invalid_argument for a spec it cannot make.
PacketStore generate_esp_traffic(const SaTable& table, const GenSpec& spec, const std::string& traffic);

}  // namespace tandem::ipsec
