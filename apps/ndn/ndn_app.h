// NDN name lookup as a ForwardApp (apps/forward_app.h): Interests in NDN TLV v0.3 over UDP port
// 6363 (IPv4 or IPv6). Each Interest is parsed and validated (ndn_tlv.h), its name looked up in
// the hash-based FIB by longest name-prefix match (ndn_fib_core.h: scalar; group prefetching over
// the burst; or the GPU kernel, ndn_gpu.h), and sent to the next hop's port. The forwarder relays
// the datagram as it is (an NDN overlay hop): no header is rewritten.
//
// Dropped before the lookup: frames that do not parse as IP (core/parse.h's reasons); IP packets
// that are not UDP to port 6363, and fragments (no reassembly): kNotHandled; a malformed UDP
// header: kBadL4; malformed TLVs (truncated, bad lengths or nesting, TLV-TYPE 0, bytes after the
// Interest, no Name first): kBadNdnTlv; another TLV packet (Data, ...): kNdnNotInterest; more than
// kMaxComponents name components: kNdnNameTooLong. Then kNoRoute when no FIB prefix matches.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "apps/forward_app.h"
#include "apps/forward_app_impl.h"
#include "apps/ndn/ndn_core.h"
#include "apps/ndn/ndn_fib.h"
#include "apps/ndn/ndn_gpu.h"

namespace tandem::ndn {

// A FIB, the routes it holds (for the reference) and names to send Interests for.
struct NdnSetup {
  std::unique_ptr<NdnFib> fib;
  std::vector<std::pair<Name, uint32_t>> routes;
  std::vector<Name> names;  // traffic: Interests are sent for these
  uint32_t max_port = 0;
  std::string source;
  std::string warning;  // duplicate names in the FIB file (DuplicateKeys::warning), or ""
};

// A FIB file (`name nexthop`, ndn_fib.h); the traffic's names are the FIB's prefixes, each
// extended by 0-2 components that the FIB does not hold (so longest-prefix matching is exercised).
// Throws TableError naming the file and line.
NdnSetup load_ndn_setup(const std::string& fib_path, uint64_t seed = 1);

// From a URL list (one URL per line, .gz ok; a first line "URLs" is a header): names as
// name_of_url (hosts reversed, path segments). The FIB holds every prefix of every URL's name from
// its host name down to its parent, and every other URL's whole name, on ports 0..ports-1 by a hash
// of the prefix; the traffic is the URLs' full names (so half match exactly, half one level up). With `fixed_bytes` > 0 (the G-Opt paper's 32-byte names),
// every name is first cut or padded to exactly that many bytes of component TLVs. With `replicas`
// R > 1, the URL set is taken R times, replica r's names under their own top-level component
// (`com~r`): a FIB R times as large with the same name shapes, for tables beyond the caches (the
// G-Opt paper's FIB holds the prefixes of 10 million URLs; the real list here has 35,378).
NdnSetup ndn_setup_from_urls(const std::string& url_path, uint32_t ports, uint32_t fixed_bytes = 0,
                             uint32_t replicas = 1);

// The same name cut (last components dropped or shortened) or padded (one more component) so that
// its component TLVs take exactly `bytes` bytes (>= 2).
Name fixed_size_name(const Name& name, uint32_t bytes);

struct NdnTraits {
  using Key = NdnKey;
  using Item = NdnItem;
  static constexpr const char* kName = "ndn";
  static const char* drop_reason_name(DropReason r) {
    return r == kBadNdnTlv ? "bad_ndn_tlv" : r == kNdnNotInterest ? "ndn_not_interest" : r == kNdnNameTooLong ? "ndn_name_too_long" : nullptr;
  }

  explicit NdnTraits(const NdnSetup& setup);
  ~NdnTraits();
  NdnTraits(NdnTraits&&) noexcept;

  size_t ports() const { return size_t{setup->max_port} + 1; }
  NdnFrameCore frame_core() const {
    const NdnFib& f = *setup->fib;
    return {f.view(), f.bucket_count(), f.size(), f.bytes_size()};
  }
  // classify: the frame core's, called out of line (ndn_app.cc) as the burst loops were measured.
  DropReason classify(const uint8_t* frame, uint32_t len, Key* key, uint16_t* l3_off, uint32_t* flow) const;
  void prefetch(const Key&) const {}  // the bucket is known only after hashing: lookup_batch prefetches
  uint32_t lookup(const Key& k) const { return setup->fib->lookup_name(k.name, k.len); }
  void lookup_batch(const Key* keys, uint32_t* results, size_t n) const;
  void to_item(const Key& k, Item* item) const { make_item(k.name, k.len, item); }
  void lookup_items(const Item* items, uint32_t* results, size_t n) const;
  uint32_t lookup_item(const Item& it) const {
    return it.len == NdnItem::kTooLong ? kResolveOnCpu : setup->fib->lookup_name(it.bytes, it.len);
  }
  uint32_t apply(uint8_t* frame, uint32_t len, uint16_t l3_off, uint32_t result) const;
  std::unique_ptr<gpu::OffloadRunner> make_gpu_runner(const gpu::OffloadOptions& opts);
  void build_reference();
  uint32_t reference_verdict(const uint8_t* frame, uint32_t len, uint16_t l3_off) const;

  const NdnSetup* setup;
  std::unique_ptr<std::unordered_map<std::string, uint32_t>> ref;  // prefix wire bytes -> next hop
  std::unique_ptr<NdnGpuTable> gpu;
};

using NdnApp = ForwardAppImpl<NdnTraits>;

}  // namespace tandem::ndn
