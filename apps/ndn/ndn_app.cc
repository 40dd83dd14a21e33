#include "apps/ndn/ndn_app.h"

#include <algorithm>
#include <stdexcept>

#include "core/flow_hash.h"
#include "core/parse.h"
#include "core/table_reader.h"

namespace tandem::ndn {

namespace {

// URL lists hold long URLs (query strings): a line may be longer than a table's.
constexpr size_t kMaxUrlLine = 65535;

// Bytes a component of `v` value bytes takes as a TLV (type 8: one octet; length: 1 or 3 octets).
uint32_t tlv_size(size_t v) { return static_cast<uint32_t>(1 + (v < 253 ? 1 : 3) + v); }

uint32_t port_of(const std::vector<uint8_t>& wire, uint32_t ports) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then mixed: stable across platforms
  for (uint8_t b : wire) h = (h ^ b) * 0x100000001b3ull;
  return static_cast<uint32_t>(mix64(h) % ports);
}

std::string wire_key(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

}  // namespace

Name fixed_size_name(const Name& name, uint32_t bytes) {
  if (bytes < 2 || bytes > 250) throw std::invalid_argument("fixed-size NDN names: 2..250 bytes");
  Name out;
  uint32_t used = 0;
  for (const std::string& c : name) {
    if (used + tlv_size(c.size()) > bytes) {
      if (bytes - used >= 2) {
        out.push_back(c.substr(0, bytes - used - 2));
        used = bytes;
      }
      break;
    }
    out.push_back(c);
    used += tlv_size(c.size());
  }
  if (bytes - used >= 2) {
    out.push_back(std::string(bytes - used - 2, '_'));
  } else if (bytes - used == 1) {
    out.back().push_back('_');  // one byte short: the last component grows by one
  }
  return out;
}

NdnSetup load_ndn_setup(const std::string& fib_path, uint64_t seed) {
  NdnFibFile file = load_ndn_fib(fib_path);
  NdnSetup s;
  s.fib = std::make_unique<NdnFib>(std::max<size_t>(file.routes.size(), 16));
  for (const auto& [prefix, nh] : file.routes) {
    if (s.fib->add(prefix, nh) == NdnFib::Status::kFull) throw std::runtime_error(fib_path + ": NDN FIB full");
    s.max_port = std::max(s.max_port, nh);
  }
  uint64_t x = seed;
  for (const auto& [prefix, nh] : file.routes) {
    Name n = prefix;
    const uint64_t extra = mix64(++x) % 3;
    for (uint64_t k = 0; k < extra && n.size() < static_cast<size_t>(kMaxComponents); ++k) {
      n.push_back("x" + std::to_string(mix64(++x) % 1000));
    }
    s.names.push_back(std::move(n));
  }
  s.routes = std::move(file.routes);
  s.source = fib_path;
  s.warning = file.duplicates.warning("names");
  return s;
}

NdnSetup ndn_setup_from_urls(const std::string& url_path, uint32_t ports, uint32_t fixed_bytes, uint32_t replicas) {
  if (ports == 0) throw std::invalid_argument("NDN setup: at least one port");
  if (replicas == 0) throw std::invalid_argument("NDN setup: at least one replica");
  LineReader in(url_path, {kMaxUrlLine});
  NdnSetup s;
  std::unordered_map<std::string, size_t> seen;
  auto add_route = [&](const Name& prefix) {
    const std::vector<uint8_t> wire = name_wire_bytes(prefix);
    if (seen.emplace(wire_key(wire.data(), wire.size()), s.routes.size()).second) {
      s.routes.emplace_back(prefix, port_of(wire, ports));
    }
  };
  std::vector<std::pair<Name, size_t>> urls;  // each URL's name and its host's component count
  for (std::string_view view; in.next(&view);) {
    const std::string line(view);
    if (line.empty() || (in.line_number() == 1 && line == "URLs")) continue;
    Name name, host;
    try {
      name = name_of_url(line);
      const size_t scheme = line.find("://");
      const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
      host = name_of_url(line.substr(0, line.find_first_of("/?#", start)));
    } catch (const NameError& e) {
      in.fail(e.what());
    }
    urls.emplace_back(std::move(name), host.size());
  }
  if (urls.empty()) throw std::runtime_error(url_path + ": no URLs");
  s.names.reserve(urls.size() * replicas);
  for (uint32_t r = 0; r < replicas; ++r) {
    for (const auto& [url_name, host_size] : urls) {
      Name name = url_name;
      if (r > 0 && !name.empty()) name[0] += "~" + std::to_string(r);  // replica r: its own top level
      size_t host = host_size;
      if (fixed_bytes) {
        name = fixed_size_name(name, fixed_bytes);
        host = std::min(host, name.size());
      }
      if (name.size() > static_cast<size_t>(kMaxComponents)) name.resize(kMaxComponents);
      // Every prefix from the host name down to the name's parent, and every other URL's whole name.
      for (size_t k = std::min(host, name.size()); k < name.size(); ++k) add_route(Name(name.begin(), name.begin() + k));
      if (s.names.size() % 2 == 1) add_route(name);
      s.names.push_back(std::move(name));
    }
  }
  s.fib = std::make_unique<NdnFib>(s.routes.size());
  for (const auto& [prefix, nh] : s.routes) {
    if (s.fib->add(prefix, nh) == NdnFib::Status::kFull) throw std::runtime_error(url_path + ": NDN FIB full");
  }
  s.max_port = ports - 1;
  s.source = url_path + (fixed_bytes ? " (names of " + std::to_string(fixed_bytes) + " bytes)" : "") +
             (replicas > 1 ? " x " + std::to_string(replicas) + " replicas" : "");
  return s;
}

NdnTraits::NdnTraits(const NdnSetup& s) : setup(&s) {}
NdnTraits::~NdnTraits() = default;
NdnTraits::NdnTraits(NdnTraits&&) noexcept = default;

DropReason NdnTraits::classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const {
  return ndn_classify(frame, len, key, l3_off, flow);
}

void NdnTraits::lookup_batch(const Key* keys, uint32_t* results, size_t n) const {
  const uint8_t* names[PacketBatch::kCapacity];
  uint32_t lens[PacketBatch::kCapacity];
  for (size_t base = 0; base < n; base += PacketBatch::kCapacity) {
    const size_t c = std::min<size_t>(PacketBatch::kCapacity, n - base);
    for (size_t j = 0; j < c; ++j) {
      names[j] = keys[base + j].name;
      lens[j] = keys[base + j].len;
    }
    setup->fib->lookup_batch(names, lens, results + base, c);
  }
}

void NdnTraits::lookup_items(const Item* items, uint32_t* results, size_t n) const {
  // The batched lookup over the items' names; a name too long for an item is left to the worker.
  const uint8_t* names[PacketBatch::kCapacity];
  uint32_t lens[PacketBatch::kCapacity];
  uint32_t hops[PacketBatch::kCapacity];
  size_t index[PacketBatch::kCapacity];
  for (size_t base = 0; base < n; base += PacketBatch::kCapacity) {
    const size_t c = std::min<size_t>(PacketBatch::kCapacity, n - base);
    size_t m = 0;
    for (size_t j = 0; j < c; ++j) {
      const Item& it = items[base + j];
      if (it.len == NdnItem::kTooLong) {
        results[base + j] = kResolveOnCpu;
        continue;
      }
      names[m] = it.bytes;
      lens[m] = it.len;
      index[m++] = base + j;
    }
    setup->fib->lookup_batch(names, lens, hops, m);
    for (size_t k = 0; k < m; ++k) results[index[k]] = hops[k];
  }
}

uint32_t NdnTraits::apply(uint8_t* frame, uint32_t len, uint16_t, uint32_t result) const {
  if (result == kResolveOnCpu) {  // a name too long for a GPU item: looked up here
    Key k{};
    uint16_t l3 = 0;
    result = classify(frame, len, &k, &l3, nullptr) == DropReason::kNone ? lookup(k) : kNoRoute;
  }
  return ndn_verdict(result);
}

std::unique_ptr<gpu::OffloadRunner> NdnTraits::make_gpu_runner(const gpu::OffloadOptions& opts) {
  if (!gpu) gpu = NdnGpuTable::create(*setup->fib);
  return gpu->make_runner(opts);
}

void NdnTraits::build_reference() {
  ref = std::make_unique<std::unordered_map<std::string, uint32_t>>();
  for (const auto& [prefix, nh] : setup->routes) {
    const std::vector<uint8_t> wire = name_wire_bytes(prefix);
    (*ref)[wire_key(wire.data(), wire.size())] = nh;
  }
}

uint32_t NdnTraits::reference_verdict(const uint8_t* frame, uint32_t len, uint16_t) const {
  // The frame is as it came (the forwarder rewrites nothing): parse it again, then try its name's
  // prefixes from the whole name down, each as a string in a map.
  ParsedPacket pp;
  const uint8_t* payload = nullptr;
  NdnName name;
  if (ndn_classify_frame(frame, len, &pp, &payload, &name) != DropReason::kNone) return Verdict::kUnset;
  const uint8_t* base = payload + name.name_offset;
  for (int k = name.count; k >= 0; --k) {
    const uint32_t end = k == 0 ? 0 : name.offset[k - 1] + name.length[k - 1] - name.name_offset;
    const auto it = ref->find(wire_key(base, end));
    if (it != ref->end()) return Verdict::port(it->second);
  }
  return Verdict::drop(DropReason::kNoRoute);
}

}  // namespace tandem::ndn
