// A minimal pcapng writer (libpcap reads pcapng but cannot write it). One section, one Ethernet
// interface with nanosecond timestamps (if_tsresol = 9), then one Enhanced Packet Block per frame.
// No libpcap dependency, so it builds everywhere.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace tandem {

class PcapngWriter {
 public:
  // Creates (truncates) `path` and writes the Section Header and Interface Description Blocks.
  // Throws IoError naming the file if it cannot be created or written.
  explicit PcapngWriter(const std::string& path, uint32_t snaplen = 262144);
  // Closes the file; errors are swallowed here, so call close() to see them.
  ~PcapngWriter();
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;

  // Appends one Enhanced Packet Block. Frames longer than the snaplen are truncated to it
  // (wire_len is kept), as a capture would.
  void write(const uint8_t* data, uint32_t caplen, uint32_t wire_len, uint64_t ts_ns);
  // Hands buffered blocks to the OS.
  void flush();
  // Flushes and closes; later write() calls throw. Safe to call twice.
  void close();

  uint64_t packets() const { return packets_; }
  const std::string& path() const { return path_; }

 private:
  void write_headers();
  void put_bytes(const void* p, size_t n);
  void put_u16(uint16_t v);
  void put_u32(uint32_t v);
  void drain();
  [[noreturn]] void fail(const char* what, int err) const;

  std::string path_;
  uint32_t snaplen_;
  FILE* file_ = nullptr;
  std::unique_ptr<uint8_t[]> buf_;  // staging buffer: one fwrite per ~1 MiB, not per field
  size_t used_ = 0;
  uint64_t packets_ = 0;
};

}  // namespace tandem
