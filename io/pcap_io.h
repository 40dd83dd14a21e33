// pcap and pcapng files: reading (libpcap; both formats, nanosecond timestamps kept), writing
// (libpcap for pcap with nanosecond magic, io/pcapng_writer.h for pcapng), and the PacketSource /
// PacketSink adapters the data path uses. Without libpcap (TANDEM_HAVE_PCAP undefined) the same
// API exists but every I/O entry point throws IoError saying so.
//
// Only Ethernet (DLT_EN10MB) captures are accepted: every app parses from an Ethernet header.
#pragma once

#include <sys/stat.h>

#include <cctype>
#include <cstdint>
#include <memory>
#include <string>

#include "io/io_error.h"
#include "io/packet_source.h"
#include "io/packet_store.h"

// libpcap's handle types, declared here so that users of this header do not see <pcap/pcap.h>.
struct pcap;
struct pcap_dumper;

namespace tandem {

class OutputFile;
class PcapngWriter;

// Reads a pcap or pcapng file packet by packet.
class PcapReader {
 public:
  // Throws IoError naming the file (and libpcap's reason) if it is missing, unreadable, not a
  // capture, or not Ethernet.
  explicit PcapReader(const std::string& path);
  ~PcapReader();
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  // Reads the next packet; false at the end of the file. `*data` stays valid until the next call.
  // A damaged file (e.g. truncated mid-record) throws IoError("<file>: packet <N>: <reason>"),
  // N being the 1-based number of the packet that could not be read.
  bool next(const uint8_t** data, uint32_t* caplen, uint32_t* wire_len, uint64_t* ts_ns);

  uint64_t packets() const { return packets_; }  // packets returned so far
  uint32_t snaplen() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  ::pcap* handle_ = nullptr;
  uint64_t packets_ = 0;
};

// Loads a whole capture into memory (the first `max_packets` packets; 0 = all).
PacketStore load_pcap(const std::string& path, uint64_t max_packets = 0);

// Replaces `window`'s frames with the reader's next ones, up to `max_bytes` of frame data (at
// least one frame when any is left), keeping the store's memory for the next window. Returns false
// when the capture had no frame left. For inputs too large to hold: memory stays at one window.
bool read_window(PcapReader& reader, PacketStore& window, uint64_t max_bytes);

// Writes packets as pcap (nanosecond timestamps) or pcapng, through an OutputFile
// (io/output_file.h): `path` changes only on close(), to the whole new capture.
class PacketWriter {
 public:
  enum class Format { kPcap, kPcapng };

  // Starts the file for `path`; throws IoError naming the file if it cannot.
  PacketWriter(const std::string& path, Format format, uint32_t snaplen = 262144);
  // Without close(), the file is discarded: `path` stays as it was.
  ~PacketWriter();
  PacketWriter(const PacketWriter&) = delete;
  PacketWriter& operator=(const PacketWriter&) = delete;

  // Frames longer than the snaplen are truncated to it (wire_len is kept).
  void write(const uint8_t* data, uint32_t caplen, uint32_t wire_len, uint64_t ts_ns);
  void flush();
  // Flushes and puts the file in place; throws IoError naming the file on a write error (the file
  // is then discarded). Safe to call twice.
  void close();

  uint64_t packets() const { return packets_; }
  const std::string& path() const { return path_; }
  Format format() const { return format_; }

 private:
  std::string path_;
  Format format_;
  uint32_t snaplen_;
  ::pcap* dead_ = nullptr;            // kPcap: a "dead" handle that only describes the file
  std::unique_ptr<OutputFile> out_;   // kPcap
  ::pcap_dumper* dumper_ = nullptr;   // kPcap: libpcap's view of out_'s stream
  std::unique_ptr<PcapngWriter> ng_;  // kPcapng
  uint64_t packets_ = 0;
};

// True when `path` ends in `ext` (lower case), in any case.
inline bool has_extension(const std::string& path, const std::string& ext) {
  if (path.size() < ext.size()) return false;
  for (size_t i = 0; i < ext.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(path[path.size() - ext.size() + i])) != ext[i]) return false;
  }
  return true;
}

// kPcapng when `path` ends in ".pcapng" (any case), else kPcap. Works without libpcap too.
inline PacketWriter::Format format_from_path(const std::string& path) {
  return has_extension(path, ".pcapng") ? PacketWriter::Format::kPcapng : PacketWriter::Format::kPcap;
}

// The format of a capture a command writes to `path`, given by `flag`: .pcap or .pcapng (any
// case). Any other name (x.pcap.gz, x.txt) throws IoError saying which extensions are written,
// since it would get a format its name does not announce; an existing file that is not a regular
// one (/dev/null, a FIFO) gets pcap.
inline PacketWriter::Format capture_format(const std::string& flag, const std::string& path) {
  struct stat st;
  if (has_extension(path, ".pcap") || has_extension(path, ".pcapng") ||
      (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
    return format_from_path(path);
  }
  throw IoError(flag + " " + path + ": Tandem writes captures as .pcap or .pcapng (uncompressed); "
                "name the file with one of these extensions");
}

// Writes every frame of `store` to `path`, in the format format_from_path() picks.
void save_pcap(const PacketStore& store, const std::string& path);

// Streams a capture without loading it, for files too big for memory.
class PcapSource final : public PacketSource {
 public:
  // Serves the first `max_packets` packets (0 = all).
  explicit PcapSource(const std::string& path, uint64_t max_packets = 0);
  uint32_t rx_burst(PacketPool& pool, PacketBatch& batch) override;
  std::string describe() const override;
  uint64_t served() const { return served_; }

 private:
  PcapReader reader_;
  uint64_t max_packets_;
  uint64_t served_ = 0;
  bool done_ = false;
};

// Writes the frames a worker forwards (verdict is a port) to a capture file.
class PcapSink final : public PacketSink {
 public:
  PcapSink(const std::string& path, PacketWriter::Format format, uint32_t snaplen = 262144);
  // The format follows the file name (format_from_path).
  explicit PcapSink(const std::string& path);
  void tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters& c) override;
  void flush() override;
  // Flushes and puts the file in place; throws IoError on a write error. Without close(), the
  // file is discarded.
  void close();
  uint64_t written() const { return writer_.packets(); }

 private:
  PacketWriter writer_;
};

}  // namespace tandem
