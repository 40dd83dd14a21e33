// libpcap-backed capture I/O. libpcap reads pcap and pcapng and converts every timestamp to
// nanoseconds when the file is opened with PCAP_TSTAMP_PRECISION_NANO; in that mode the
// pcap_pkthdr's tv_usec field carries nanoseconds.
#include "io/pcap_io.h"

#include <pcap/pcap.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/output_file.h"
#include "io/pcapng_writer.h"

namespace tandem {
namespace {

constexpr uint64_t kNsPerSec = 1000000000ull;
constexpr size_t kWriteBuffer = 1 << 20;  // fewer write(2) calls than stdio's 4 KiB default

// libpcap often starts its message with the file name; we add it ourselves, once.
std::string strip_path(const std::string& msg, const std::string& path) {
  const std::string prefix = path + ": ";
  if (msg.compare(0, prefix.size(), prefix) == 0) return msg.substr(prefix.size());
  return msg;
}

// Transparent hugepages for the loaded frames (see the same helper in traffic_gen.cc): the
// replay hot path streams through them.
void advise_hugepages(void* p, size_t bytes) {
  constexpr uintptr_t kHuge = 2u << 20;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
}

std::string link_type_name(int dlt) {
  const char* name = pcap_datalink_val_to_name(dlt);
  const char* desc = pcap_datalink_val_to_description(dlt);
  std::string s = name ? name : "DLT " + std::to_string(dlt);
  if (desc) s += std::string(" (") + desc + ")";
  return s;
}

}  // namespace

// ---- PcapReader ----

PcapReader::PcapReader(const std::string& path) : path_(path) {
  char errbuf[PCAP_ERRBUF_SIZE];
  errbuf[0] = '\0';
  handle_ =
      pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (handle_ == nullptr) {
    throw IoError(path + ": cannot read capture: " + strip_path(errbuf, path));
  }
  const int dlt = pcap_datalink(handle_);
  if (dlt != DLT_EN10MB) {
    pcap_close(handle_);
    handle_ = nullptr;
    throw IoError(path + ": link type " + link_type_name(dlt) +
                  " is not supported: Tandem reads Ethernet (EN10MB) captures only");
  }
}

PcapReader::~PcapReader() {
  if (handle_ != nullptr) pcap_close(handle_);
}

bool PcapReader::next(const uint8_t** data, uint32_t* caplen, uint32_t* wire_len, uint64_t* ts_ns) {
  pcap_pkthdr* hdr = nullptr;
  const u_char* pkt = nullptr;
  const int rc = pcap_next_ex(handle_, &hdr, &pkt);
  if (TANDEM_LIKELY(rc == 1)) {
    *data = pkt;
    *caplen = hdr->caplen;
    // A record cannot hold more bytes than the frame had on the wire; one that claims to (a damaged
    // or hostile file) has at least its captured length, which the data path's checks go by.
    *wire_len = std::max(hdr->len, hdr->caplen);
    *ts_ns =
        static_cast<uint64_t>(hdr->ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(hdr->ts.tv_usec);
    ++packets_;
    return true;
  }
  if (rc == PCAP_ERROR_BREAK) return false;  // end of file
  const std::string why = rc == PCAP_ERROR ? pcap_geterr(handle_)
                                           : "unexpected pcap_next_ex result " + std::to_string(rc);
  throw IoError(path_ + ": packet " + std::to_string(packets_ + 1) + ": " + why);
}

uint32_t PcapReader::snaplen() const { return static_cast<uint32_t>(pcap_snapshot(handle_)); }

PacketStore load_pcap(const std::string& path, uint64_t max_packets) {
  PcapReader reader(path);
  PacketStore store;
  // The file size bounds the frame bytes; reserving it avoids regrowing a multi-GiB vector.
  struct stat st;
  if (max_packets == 0 && stat(path.c_str(), &st) == 0 && st.st_size > 0) {
    store.bytes.reserve(static_cast<size_t>(st.st_size));
    advise_hugepages(store.bytes.data(), store.bytes.capacity());
  }
  const uint8_t* data;
  uint32_t caplen, wire_len;
  uint64_t ts;
  while ((max_packets == 0 || store.size() < max_packets) &&
         reader.next(&data, &caplen, &wire_len, &ts)) {
    store.add(data, caplen, wire_len, ts);
  }
  return store;
}

bool read_window(PcapReader& reader, PacketStore& window, uint64_t max_bytes) {
  window.bytes.clear();
  window.offset.clear();
  window.caplen.clear();
  window.wire_len.clear();
  window.ts_ns.clear();
  // Room for the window and the largest frame that may end it, once: growing by doubling would
  // hold the old and the new buffer at once, twice the window.
  window.bytes.reserve(max_bytes + (uint64_t{1} << 18));
  const uint8_t* data;
  uint32_t caplen, wire_len;
  uint64_t ts;
  while (window.bytes.size() < max_bytes && reader.next(&data, &caplen, &wire_len, &ts)) {
    window.add(data, caplen, wire_len, ts);
  }
  return window.size() > 0;
}

// ---- PacketWriter ----

PacketWriter::PacketWriter(const std::string& path, Format format, uint32_t snaplen)
    : path_(path), format_(format), snaplen_(snaplen == 0 ? 262144 : snaplen) {
  if (format == Format::kPcapng) {
    ng_ = std::make_unique<PcapngWriter>(path, snaplen_);
    return;
  }
  dead_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(snaplen_),
                                               PCAP_TSTAMP_PRECISION_NANO);
  if (dead_ == nullptr) throw IoError(path + ": cannot set up a pcap writer");
  try {
    out_ = std::make_unique<OutputFile>(path, kWriteBuffer);
  } catch (...) {
    pcap_close(dead_);
    dead_ = nullptr;
    throw;
  }
  // The nanosecond dead handle makes libpcap write the nanosecond magic (0xa1b23c4d).
  dumper_ = pcap_dump_fopen(dead_, out_->stream());
  if (dumper_ == nullptr) {
    // libpcap closes the stream itself when writing the file header fails.
    const std::string why = pcap_geterr(dead_);
    out_->forget_stream();
    out_.reset();
    pcap_close(dead_);
    dead_ = nullptr;
    throw IoError(path + ": cannot write pcap header: " + strip_path(why, path));
  }
}

// The dumper is a view of out_'s stream (pcap_dump_close() would only fclose it): out_ closes
// the stream, and discards the file unless close() committed it.
PacketWriter::~PacketWriter() {
  if (dead_ != nullptr) pcap_close(dead_);
}

void PacketWriter::write(const uint8_t* data, uint32_t caplen, uint32_t wire_len, uint64_t ts_ns) {
  if (ng_) {
    ng_->write(data, caplen, wire_len, ts_ns);
    ++packets_;
    return;
  }
  if (dumper_ == nullptr) throw IoError(path_ + ": write after close");
  pcap_pkthdr hdr;
  hdr.ts.tv_sec = static_cast<time_t>(ts_ns / kNsPerSec);
  hdr.ts.tv_usec = static_cast<suseconds_t>(ts_ns % kNsPerSec);  // ns: nanosecond handle
  hdr.caplen = std::min(caplen, snaplen_);
  hdr.len = wire_len;
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, data);
  // pcap_dump() reports nothing; the stream's error flag is sticky, so polling it now and then
  // still catches a full disk well before close().
  if (TANDEM_UNLIKELY((++packets_ & 0xFFF) == 0) && std::ferror(out_->stream())) {
    const int err = errno;  // most likely still the failed write's
    throw IoError(path_ + ": write failed after " + std::to_string(packets_) + " packets" +
                  (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
  }
}

void PacketWriter::flush() {
  if (ng_) {
    ng_->flush();
    return;
  }
  if (dumper_ == nullptr) return;
  if (pcap_dump_flush(dumper_) != 0 || std::ferror(out_->stream())) {
    throw IoError(path_ + ": write failed: " + std::strerror(errno));
  }
}

void PacketWriter::close() {
  if (ng_) {
    // Reset even when close() throws, so a second close() is a no-op.
    std::unique_ptr<PcapngWriter> ng = std::move(ng_);
    ng->close();
    return;
  }
  if (dumper_ == nullptr) return;
  dumper_ = nullptr;
  pcap_close(dead_);
  dead_ = nullptr;
  const std::unique_ptr<OutputFile> out = std::move(out_);
  out->commit();
}

void save_pcap(const PacketStore& store, const std::string& path) {
  PacketWriter writer(path, format_from_path(path));
  for (size_t i = 0; i < store.size(); ++i) {
    writer.write(store.frame(i), store.caplen[i], store.wire_len[i], store.ts_ns[i]);
  }
  writer.close();
}

// ---- PcapSource ----

PcapSource::PcapSource(const std::string& path, uint64_t max_packets)
    : reader_(path), max_packets_(max_packets) {}

uint32_t PcapSource::rx_burst(PacketPool& pool, PacketBatch& batch) {
  if (done_ || batch.size >= PacketBatch::kCapacity) return 0;
  uint64_t want = PacketBatch::kCapacity - batch.size;
  if (max_packets_ != 0) {
    want = std::min(want, max_packets_ - served_);
    if (want == 0) {
      done_ = true;
      return 0;
    }
  }
  // Cells are taken before reading, since a packet read from the file cannot be put back.
  const uint32_t first = batch.size;
  const uint32_t got = pool.alloc_bulk(&batch.cell[first], static_cast<uint32_t>(want));
  const uint32_t max_len = std::min<uint32_t>(pool.max_frame(), 0xFFFFu);
  uint32_t n = 0;
  try {
    const uint8_t* data;
    uint32_t caplen, wire_len;
    uint64_t ts;
    for (; n < got; ++n) {
      if (!reader_.next(&data, &caplen, &wire_len, &ts)) {
        done_ = true;
        break;
      }
      const uint32_t i = first + n;
      const uint32_t len = std::min(caplen, max_len);
      std::memcpy(pool.data(batch.cell[i]), data, len);
      batch.len[i] = static_cast<uint16_t>(len);
      batch.wire_len[i] = wire_len;
      batch.ts_ns[i] = ts;
      batch.verdict[i] = Verdict::kUnset;
    }
  } catch (...) {
    pool.free_bulk(&batch.cell[first], got);  // nothing was appended to the batch
    throw;
  }
  if (n < got) pool.free_bulk(&batch.cell[first + n], got - n);
  batch.size = first + n;
  served_ += n;
  return n;
}

std::string PcapSource::describe() const {
  std::string s = "capture file " + reader_.path();
  if (max_packets_ != 0) s += " (first " + std::to_string(max_packets_) + " packets)";
  return s;
}

// ---- PcapSink ----

PcapSink::PcapSink(const std::string& path, PacketWriter::Format format, uint32_t snaplen)
    : writer_(path, format, snaplen) {}

PcapSink::PcapSink(const std::string& path) : writer_(path, format_from_path(path)) {}

void PcapSink::tx_burst(const PacketPool& pool, const PacketBatch& batch, Counters&) {
  for (uint32_t i = 0; i < batch.size; ++i) {
    // kUnset carries the drop flag too, so undecided packets are not written either.
    if (Verdict::is_drop(batch.verdict[i])) continue;
    writer_.write(pool.data(batch.cell[i]), batch.len[i], batch.wire_len[i], batch.ts_ns[i]);
  }
}

void PcapSink::flush() { writer_.flush(); }

void PcapSink::close() { writer_.close(); }

}  // namespace tandem
