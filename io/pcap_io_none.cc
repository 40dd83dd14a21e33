// Stand-in for io/pcap_io.cc in builds without libpcap (the GPU machine): the API links, and
// every capture-file entry point throws IoError saying why, naming the file.
#include <cctype>

#include "io/output_file.h"
#include "io/pcap_io.h"
#include "io/pcapng_writer.h"

namespace tandem {
namespace {

[[noreturn]] void no_pcap(const std::string& path) {
  throw IoError(path + ": this build of Tandem has no libpcap support");
}

}  // namespace

// The (void) uses keep clang's -Wunused-private-field quiet about members only pcap_io.cc uses.
PcapReader::PcapReader(const std::string& path) : path_(path) {
  (void)handle_;
  no_pcap(path);
}
PcapReader::~PcapReader() = default;
bool PcapReader::next(const uint8_t**, uint32_t*, uint32_t*, uint64_t*) { no_pcap(path_); }
uint32_t PcapReader::snaplen() const { no_pcap(path_); }

PacketStore load_pcap(const std::string& path, uint64_t) { no_pcap(path); }
bool read_window(PcapReader& reader, PacketStore&, uint64_t) { no_pcap(reader.path()); }

PacketWriter::PacketWriter(const std::string& path, Format format, uint32_t snaplen)
    : path_(path), format_(format), snaplen_(snaplen) {
  (void)snaplen_;
  (void)dead_;
  (void)dumper_;
  (void)out_;
  no_pcap(path);
}
PacketWriter::~PacketWriter() = default;
void PacketWriter::write(const uint8_t*, uint32_t, uint32_t, uint64_t) { no_pcap(path_); }
void PacketWriter::flush() { no_pcap(path_); }
void PacketWriter::close() { no_pcap(path_); }

void save_pcap(const PacketStore&, const std::string& path) { no_pcap(path); }

PcapSource::PcapSource(const std::string& path, uint64_t max_packets)
    : reader_(path), max_packets_(max_packets) {
  (void)max_packets_;
  (void)done_;
}
uint32_t PcapSource::rx_burst(PacketPool&, PacketBatch&) { no_pcap(reader_.path()); }
std::string PcapSource::describe() const { no_pcap(reader_.path()); }

PcapSink::PcapSink(const std::string& path, PacketWriter::Format format, uint32_t snaplen)
    : writer_(path, format, snaplen) {}
PcapSink::PcapSink(const std::string& path) : writer_(path, PacketWriter::Format::kPcap) {}
void PcapSink::tx_burst(const PacketPool&, const PacketBatch&, Counters&) { no_pcap(writer_.path()); }
void PcapSink::flush() { no_pcap(writer_.path()); }
void PcapSink::close() { no_pcap(writer_.path()); }

}  // namespace tandem
