// A minimal pcapng writer (libpcap reads pcapng but cannot write it). One section, one Ethernet
// interface with nanosecond timestamps (if_tsresol = 9), then one Enhanced Packet Block per frame.
// No libpcap dependency, so it builds everywhere. The file is written through an OutputFile
// (io/output_file.h): it appears, whole, on close().
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "io/output_file.h"

namespace tandem {

class PcapngWriter {
 public:
  // Starts the file for `path` and writes the Section Header and Interface Description Blocks.
  // Throws IoError naming the file if it cannot be created or written.
  explicit PcapngWriter(const std::string& path, uint32_t snaplen = 262144);
  // Without close(), the file is discarded: `path` stays as it was.
  ~PcapngWriter();
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;

  // Appends one Enhanced Packet Block. Frames longer than the snaplen are truncated to it
  // (wire_len is kept), as a capture would.
  void write(const uint8_t* data, uint32_t caplen, uint32_t wire_len, uint64_t ts_ns);
  // Hands buffered blocks to the OS.
  void flush();
  // Flushes and puts the file in place (throws IoError on a write error); later write() calls
  // throw. Safe to call twice.
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
  std::unique_ptr<OutputFile> out_;  // null once closed
  std::unique_ptr<uint8_t[]> buf_;  // staging buffer: one fwrite per ~1 MiB, not per field
  size_t used_ = 0;
  uint64_t packets_ = 0;
};

}  // namespace tandem
