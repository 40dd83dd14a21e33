#include "bench/dpdk_acl.h"

#include <rte_acl.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace tandem::bench {

namespace {

// rte_acl's input: the fields at fixed offsets, network byte order; the first field is one byte
// and the rest come in 4-byte groups (the two ports share one).
struct AclInput {
  uint8_t proto;
  uint8_t pad[3];
  uint32_t src;
  uint32_t dst;
  uint16_t sport;
  uint16_t dport;
};

enum { kProtoField, kSrcField, kDstField, kSportField, kDportField, kNumFields };

const rte_acl_field_def kDefs[kNumFields] = {
    {RTE_ACL_FIELD_TYPE_BITMASK, sizeof(uint8_t), kProtoField, 0, offsetof(AclInput, proto)},
    {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), kSrcField, 1, offsetof(AclInput, src)},
    {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), kDstField, 2, offsetof(AclInput, dst)},
    {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), kSportField, 3, offsetof(AclInput, sport)},
    {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), kDportField, 3, offsetof(AclInput, dport)},
};

RTE_ACL_RULE_DEF(Acl5Rule, kNumFields);

// The prefix length of [lo, hi], or -1 when the range is not a prefix.
int prefix_len(uint32_t lo, uint32_t hi) {
  const uint64_t span = uint64_t{hi} - lo + 1;
  if (span & (span - 1)) return -1;
  int bits = 0;
  while ((uint64_t{1} << bits) < span) ++bits;
  if (lo & static_cast<uint32_t>(span - 1)) return -1;
  return 32 - bits;
}

// rte_acl's classify methods on x86, widest first: the order in which rte_acl picks its default.
struct AclAlgorithm {
  enum rte_acl_classify_alg alg;  // "enum": a function of that name hides the tag
  const char* name;
};
constexpr AclAlgorithm kAlgorithms[] = {{RTE_ACL_CLASSIFY_AVX512X32, "avx512x32"},
                                        {RTE_ACL_CLASSIFY_AVX512X16, "avx512x16"},
                                        {RTE_ACL_CLASSIFY_AVX2, "avx2"},
                                        {RTE_ACL_CLASSIFY_SSE, "sse"},
                                        {RTE_ACL_CLASSIFY_SCALAR, "scalar"}};

}  // namespace

struct DpdkAcl::Impl {
  rte_acl_ctx* ctx = nullptr;
  std::string algorithm;
  std::vector<AclInput> input;
  std::vector<const uint8_t*> ptrs;
};

DpdkAcl::DpdkAcl(const std::vector<acl::Rule>& rules, int socket) : impl_(std::make_unique<Impl>()) {
  rte_acl_param prm{};
  prm.name = "tandem_bench_acl";
  prm.socket_id = socket;
  prm.rule_size = RTE_ACL_RULE_SZ(kNumFields);
  prm.max_rule_num = static_cast<uint32_t>(std::max<size_t>(rules.size(), 1));
  impl_->ctx = rte_acl_create(&prm);
  if (!impl_->ctx) throw std::runtime_error("rte_acl_create failed (rte_errno " + std::to_string(rte_errno) + ")");
  std::vector<Acl5Rule> rs(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) {
    const acl::Rule& r = rules[i];
    Acl5Rule& d = rs[i];
    d.data.category_mask = 1;
    d.data.priority = static_cast<int32_t>(rules.size() - i);  // earlier = higher
    d.data.userdata = static_cast<uint32_t>(i + 1);
    d.field[kProtoField].value.u8 = r.proto_value;
    d.field[kProtoField].mask_range.u8 = r.proto_mask;
    const int sl = prefix_len(r.lo[acl::kSrc], r.hi[acl::kSrc]);
    const int dl = prefix_len(r.lo[acl::kDst], r.hi[acl::kDst]);
    if (sl < 0 || dl < 0) throw std::runtime_error("rte_acl: rule " + std::to_string(i + 1) + "'s address range is not a prefix");
    d.field[kSrcField].value.u32 = r.lo[acl::kSrc];
    d.field[kSrcField].mask_range.u32 = static_cast<uint32_t>(sl);
    d.field[kDstField].value.u32 = r.lo[acl::kDst];
    d.field[kDstField].mask_range.u32 = static_cast<uint32_t>(dl);
    d.field[kSportField].value.u16 = static_cast<uint16_t>(r.lo[acl::kSport]);
    d.field[kSportField].mask_range.u16 = static_cast<uint16_t>(r.hi[acl::kSport]);
    d.field[kDportField].value.u16 = static_cast<uint16_t>(r.lo[acl::kDport]);
    d.field[kDportField].mask_range.u16 = static_cast<uint16_t>(r.hi[acl::kDport]);
  }
  int rc = rs.empty() ? 0 : rte_acl_add_rules(impl_->ctx, reinterpret_cast<const rte_acl_rule*>(rs.data()),
                                              static_cast<uint32_t>(rs.size()));
  if (rc != 0) throw std::runtime_error("rte_acl_add_rules: " + std::to_string(rc));
  rte_acl_config cfg{};
  cfg.num_categories = 1;
  cfg.num_fields = kNumFields;
  std::copy(kDefs, kDefs + kNumFields, cfg.defs);
  rc = rte_acl_build(impl_->ctx, &cfg);
  if (rc != 0) throw std::runtime_error("rte_acl_build: " + std::to_string(rc) + " (out of memory on the heap?)");
  // Named, not left to DPDK's default unseen: the first method this CPU and build allow is the
  // default's choice (its maximum SIMD width is set when the EAL starts: bench/dpdk_env.cc).
  for (const AclAlgorithm& a : kAlgorithms) {
    if (set_algorithm(a.name)) break;
  }
}

const std::string& DpdkAcl::algorithm() const { return impl_->algorithm; }

bool DpdkAcl::set_algorithm(const std::string& name) {
  for (const AclAlgorithm& a : kAlgorithms) {
    if (name != a.name) continue;
    if (rte_acl_set_ctx_classify(impl_->ctx, a.alg) != 0) return false;
    impl_->algorithm = a.name;
    return true;
  }
  return false;
}

DpdkAcl::~DpdkAcl() {
  if (impl_ && impl_->ctx) rte_acl_free(impl_->ctx);
}

void DpdkAcl::set_headers(const acl::Header* h, size_t n) {
  impl_->input.resize(n);
  impl_->ptrs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    AclInput& in = impl_->input[i];
    in = {};
    in.proto = h[i].proto;
    in.src = htonl(h[i].src);
    in.dst = htonl(h[i].dst);
    in.sport = htons(h[i].sport);
    in.dport = htons(h[i].dport);
    impl_->ptrs[i] = reinterpret_cast<const uint8_t*>(&in);
  }
}

void DpdkAcl::classify(uint32_t* out, uint32_t burst) const {
  const size_t n = impl_->ptrs.size();
  for (size_t i = 0; i < n; i += burst) {
    const uint32_t m = static_cast<uint32_t>(std::min<size_t>(burst, n - i));
    rte_acl_classify(impl_->ctx, impl_->ptrs.data() + i, out + i, m, 1);
    for (uint32_t k = 0; k < m; ++k) out[i + k] = out[i + k] == 0 ? acl::kNoMatch : out[i + k] - 1;
  }
}

}  // namespace tandem::bench
