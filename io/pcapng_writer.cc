#include "io/pcapng_writer.h"

#include <cerrno>
#include <cstring>

#include "io/io_error.h"

namespace tandem {
namespace {

constexpr uint32_t kShbType = 0x0A0D0D0Au;
constexpr uint32_t kIdbType = 0x00000001u;
constexpr uint32_t kEpbType = 0x00000006u;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4Du;
constexpr uint16_t kLinktypeEthernet = 1;
constexpr uint16_t kOptEndOfOpt = 0;
constexpr uint16_t kOptIfTsresol = 9;
constexpr size_t kBufSize = 1 << 20;

constexpr uint32_t pad4(uint32_t n) { return (n + 3u) & ~3u; }

}  // namespace

PcapngWriter::PcapngWriter(const std::string& path, uint32_t snaplen)
    : path_(path), snaplen_(snaplen == 0 ? 262144 : snaplen) {
  // Blocks are staged in buf_ and leave in ~1 MiB writes: the stream needs no buffer of its own.
  out_ = std::make_unique<OutputFile>(path, 0);
  buf_ = std::make_unique<uint8_t[]>(kBufSize);
  write_headers();
}

void PcapngWriter::write_headers() {
  // Section Header Block. put_*() write little-endian whatever the host; readers learn the
  // order from the byte-order magic.
  put_u32(kShbType);
  put_u32(28);  // block total length: no options
  put_u32(kByteOrderMagic);
  put_u16(1);            // major version
  put_u16(0);            // minor version
  put_u32(0xFFFFFFFFu);  // section length: -1 = unspecified (64 bits)
  put_u32(0xFFFFFFFFu);
  put_u32(28);

  // Interface Description Block with if_tsresol = 9 (10^-9 s units), then opt_endofopt.
  const uint32_t idb_len = 8 + 8 + 8 + 4 + 4;  // type/len, body, if_tsresol, endofopt, len
  put_u32(kIdbType);
  put_u32(idb_len);
  put_u16(kLinktypeEthernet);
  put_u16(0);  // reserved
  put_u32(snaplen_);
  put_u16(kOptIfTsresol);
  put_u16(1);
  const uint8_t tsresol[4] = {9, 0, 0, 0};  // value plus padding to 32 bits
  put_bytes(tsresol, sizeof tsresol);
  put_u16(kOptEndOfOpt);
  put_u16(0);
  put_u32(idb_len);
}

PcapngWriter::~PcapngWriter() = default;  // out_ discards an unfinished file

void PcapngWriter::write(const uint8_t* data, uint32_t caplen, uint32_t wire_len, uint64_t ts_ns) {
  if (out_ == nullptr) throw IoError(path_ + ": write after close");
  if (caplen > snaplen_) caplen = snaplen_;
  const uint32_t padded = pad4(caplen);
  const uint32_t total = 32 + padded;
  put_u32(kEpbType);
  put_u32(total);
  put_u32(0);  // interface id
  put_u32(static_cast<uint32_t>(ts_ns >> 32));
  put_u32(static_cast<uint32_t>(ts_ns));
  put_u32(caplen);
  put_u32(wire_len);
  put_bytes(data, caplen);
  static constexpr uint8_t kZeros[4] = {0, 0, 0, 0};
  put_bytes(kZeros, padded - caplen);
  put_u32(total);
  ++packets_;
}

void PcapngWriter::flush() {
  if (out_ == nullptr) return;
  drain();
  if (std::fflush(out_->stream()) != 0) fail("write failed", errno);
}

void PcapngWriter::close() {
  if (out_ == nullptr) return;
  try {
    drain();
    out_->commit();
  } catch (...) {
    out_.reset();  // the file is discarded, and a second close() is a no-op
    throw;
  }
  out_.reset();
}

void PcapngWriter::put_bytes(const void* p, size_t n) {
  if (used_ + n > kBufSize) {
    drain();
    if (n > kBufSize) {  // larger than the staging buffer: write straight through
      if (std::fwrite(p, 1, n, out_->stream()) != n) fail("write failed", errno);
      return;
    }
  }
  if (n != 0) std::memcpy(buf_.get() + used_, p, n);
  used_ += n;
}

void PcapngWriter::put_u16(uint16_t v) {
  const uint8_t b[2] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8)};
  put_bytes(b, 2);
}

void PcapngWriter::put_u32(uint32_t v) {
  const uint8_t b[4] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8),
                        static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 24)};
  put_bytes(b, 4);
}

void PcapngWriter::drain() {
  if (used_ == 0) return;
  const size_t n = used_;
  used_ = 0;  // dropped even on failure: the file is broken anyway and close() must not retry
  if (std::fwrite(buf_.get(), 1, n, out_->stream()) != n) fail("write failed", errno);
}

void PcapngWriter::fail(const char* what, int err) const {
  std::string msg = path_ + ": " + what;
  if (err != 0) msg += std::string(": ") + std::strerror(err);
  throw IoError(msg);
}

}  // namespace tandem
