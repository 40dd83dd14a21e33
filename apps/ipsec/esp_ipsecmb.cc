#include "apps/ipsec/esp_ipsecmb.h"

#include <stdexcept>

#if TANDEM_HAVE_IPSEC_MB

#include <intel-ipsec-mb.h>
#include <openssl/crypto.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "core/byte_order.h"
#include "core/compiler.h"

namespace tandem::ipsec {

namespace {

constexpr uint32_t kAesBlock = 16;
constexpr uint32_t kAeadNonceBytes = 12;
constexpr uint32_t kAeadTagBytes = 16;
constexpr uint32_t kHmacSha1IcvBytes = 12;
constexpr uint32_t kSha1BlockBytes = 64;
constexpr uint32_t kSeqHighBytes = 4;
alignas(16) constexpr uint8_t kZeroIv[kAesBlock] = {};

struct ManagerFree {
  void operator()(IMB_MGR* m) const { free_mb_mgr(m); }
};
using Manager = std::unique_ptr<IMB_MGR, ManagerFree>;

// A manager set up for the best code path this CPU has; throws std::runtime_error when the library
// cannot run here.
Manager new_manager(IMB_ARCH* arch) {
  Manager m(alloc_mb_mgr(0));
  if (!m) throw std::runtime_error("intel-ipsec-mb: cannot allocate a manager");
  init_mb_mgr_auto(m.get(), arch);
  const int e = imb_get_errno(m.get());
  if (e != 0 || *arch == IMB_ARCH_NONE) {
    throw std::runtime_error(std::string("intel-ipsec-mb cannot run on this CPU: ") +
                             (e != 0 ? imb_get_strerror(e) : "no code path"));
  }
  return m;
}

std::string arch_description(const IMB_MGR* m, IMB_ARCH arch) {
#if IMB_VERSION_NUM >= IMB_VERSION(1, 4, 0)
  (void)arch;
  const char* type = nullptr;
  const char* isa = nullptr;
  if (imb_get_arch_type_string(m, &type, &isa) != 0 || type == nullptr) return "unknown code path";
  return std::string(type) + (isa ? std::string(" (") + isa + ")" : "");
#else
  // 1.3's code paths, in its IMB_ARCH order.
  static const char* const kNames[] = {"none", "no AES-NI", "SSE", "AVX", "AVX2", "AVX512"};
  const std::string name = arch < IMB_ARCH_NUM ? kNames[arch] : "unknown";
  return name + ((m->features & IMB_FEATURE_SHANI) ? " (SHA-NI)" : "");
#endif
}

// An SA's expanded keys, in the forms the jobs point to.
struct alignas(64) SaKeys {
  union {
    // AES-GCM: round keys and GHASH key powers, laid out for the code path that made them.
    gcm_key_data gcm;
    struct {
      alignas(16) uint32_t enc[4 * 15];  // AES key schedules (room for AES-256's 15 round keys)
      alignas(16) uint32_t dec[4 * 15];
      alignas(16) uint8_t ipad[kSha1BlockBytes];  // SHA-1 states after key ^ ipad and key ^ opad
      alignas(16) uint8_t opad[kSha1BlockBytes];  // (the first 20 bytes are used)
    } cbc;
    alignas(16) uint8_t chacha[32];  // ChaCha20-Poly1305 takes the key as it is
  };
};

// HMAC-SHA1's inner and outer states for `key` (RFC 2104), as the HMAC jobs take them.
void hmac_sha1_pads(IMB_MGR* m, const std::vector<uint8_t>& key, uint8_t* ipad, uint8_t* opad) {
#if IMB_VERSION_NUM >= IMB_VERSION(1, 4, 0)
  imb_hmac_ipad_opad(m, IMB_AUTH_HMAC_SHA_1, key.data(), key.size(), ipad, opad);
#else
  // 1.3 lacks the helper: one SHA-1 block of the key XORed with the pad bytes. SA files have 20-byte
  // keys; a key longer than a block would first have to be hashed.
  if (key.size() > kSha1BlockBytes) throw std::invalid_argument("intel-ipsec-mb: HMAC key longer than a block");
  alignas(16) uint8_t block[kSha1BlockBytes];
  for (const auto& [pad, out] : {std::pair{uint8_t{0x36}, ipad}, std::pair{uint8_t{0x5c}, opad}}) {
    std::memset(block, pad, sizeof block);
    for (size_t i = 0; i < key.size(); ++i) block[i] ^= key[i];
    IMB_SHA1_ONE_BLOCK(m, block, out);
  }
  OPENSSL_cleanse(block, sizeof block);
#endif
}

// What a job keeps pointing to until it is retired, and what retiring it needs.
struct Scratch {
  alignas(16) uint8_t nonce[kAeadNonceBytes];
  alignas(16) uint8_t aad[12];
  alignas(16) uint8_t tag[kAeadTagBytes];  // open: the ICV the library computed
  alignas(16) uint8_t icv[kAeadTagBytes];  // open: the ICV received
  uint32_t icv_bytes;
  bool open;
  bool restore_icv;  // open with ESN: the ICV's first bytes held the sequence number's high half
};

}  // namespace

// The expanded keys of a table's SAs, made on an SA's first use under a lock with a manager of
// their own, then read without one (published with release/acquire).
class EspIpsecMb::Keys {
 public:
  explicit Keys(const SaTable& table)
      : table_(table),
        size_(table.capacity()),
        mgr_(new_manager(&arch_)),
        slots_(std::make_unique<std::atomic<SaKeys*>[]>(size_)) {}
  // Without the table, which may be gone by now (a thread that ran the app ends after it).
  ~Keys() {
    for (size_t i = 0; i < size_; ++i) {
      if (SaKeys* k = slots_[i].load(std::memory_order_relaxed)) {
        OPENSSL_cleanse(k, sizeof *k);
        delete k;
      }
    }
  }
  Keys(const Keys&) = delete;
  Keys& operator=(const Keys&) = delete;

  const SaTable& table() const { return table_; }
  IMB_ARCH arch() const { return arch_; }
  void forget(uint32_t i) {
    if (SaKeys* k = slots_[i].exchange(nullptr, std::memory_order_acq_rel)) {
      OPENSSL_cleanse(k, sizeof *k);
      delete k;
    }
  }
  const SaKeys& get(uint32_t i) {
    if (const SaKeys* k = slots_[i].load(std::memory_order_acquire); TANDEM_LIKELY(k != nullptr)) return *k;
    return expand(i);
  }

 private:
  const SaKeys& expand(uint32_t i) {
    std::lock_guard g(mu_);
    if (const SaKeys* k = slots_[i].load(std::memory_order_relaxed)) return *k;
    const Sa& sa = table_.sa(i);
    if (sa.key.size() != cipher_key_bytes(sa.cipher)) {
      throw std::logic_error("intel-ipsec-mb: SA key of the wrong length");
    }
    auto k = std::make_unique<SaKeys>();
    IMB_MGR* m = mgr_.get();
    switch (sa.cipher) {
      case Cipher::kAes128Cbc:
        IMB_AES_KEYEXP_128(m, sa.key.data(), k->cbc.enc, k->cbc.dec);
        hmac_sha1_pads(m, sa.auth_key, k->cbc.ipad, k->cbc.opad);
        break;
      case Cipher::kAes128Gcm: IMB_AES128_GCM_PRE(m, sa.key.data(), &k->gcm); break;
      case Cipher::kAes256Gcm: IMB_AES256_GCM_PRE(m, sa.key.data(), &k->gcm); break;
      case Cipher::kChacha20Poly1305: std::memcpy(k->chacha, sa.key.data(), sizeof k->chacha); break;
    }
    SaKeys* p = k.release();
    slots_[i].store(p, std::memory_order_release);
    return *p;
  }

  const SaTable& table_;
  const size_t size_;
  IMB_ARCH arch_ = IMB_ARCH_NONE;
  Manager mgr_;
  std::mutex mu_;
  std::unique_ptr<std::atomic<SaKeys*>[]> slots_;
};

struct EspIpsecMb::Engine {
  std::shared_ptr<Keys> keys;
  Manager mgr;
  std::vector<Scratch> scratch;  // one per op of the burst in flight

  void prepare(IMB_JOB* job, EspCryptoOp& op, Scratch& s);
  static void retire(IMB_JOB* job);
};

// Fills a job for one op. Every field a job of this kind reads is set: a job slot keeps what the
// previous job in it left.
void EspIpsecMb::Engine::prepare(IMB_JOB* job, EspCryptoOp& op, Scratch& s) {
  const Sa& sa = keys->table().sa(op.sa);
  const SaKeys& k = keys->get(op.sa);
  const EspLayout& l = op.layout;
  uint8_t* frame = op.frame;
  s.open = sa.dir == SaDir::kIn;
  s.restore_icv = false;
  job->user_data = &op;
  job->user_data2 = &s;
  job->cipher_direction = s.open ? IMB_DIR_DECRYPT : IMB_DIR_ENCRYPT;
  // Encrypt-then-MAC: sealing ciphers first, opening authenticates the ciphertext first.
  job->chain_order = s.open ? IMB_ORDER_HASH_CIPHER : IMB_ORDER_CIPHER_HASH;
  if (!s.open) esp_iv_seed(sa.cipher, sa.spi, op.seq, frame + l.iv);

  if (sa.cipher == Cipher::kAes128Cbc) {
    s.icv_bytes = kHmacSha1IcvBytes;
    job->cipher_mode = IMB_CIPHER_CBC;
    job->enc_keys = k.cbc.enc;
    job->dec_keys = k.cbc.dec;
    job->key_len_in_bytes = 16;
    job->iv_len_in_bytes = kAesBlock;
    job->src = frame + l.esp;
    if (!s.open) {
      // As on the OpenSSL path: the seed block in the IV's place, encrypted under a zero IV as the
      // first block of the pass, becomes the IV, and the pass goes on as CBC under it.
      job->iv = kZeroIv;
      job->cipher_start_src_offset_in_bytes = l.iv - l.esp;
      job->msg_len_to_cipher_in_bytes = kAesBlock + l.payload_len;
      job->dst = frame + l.iv;
      job->auth_tag_output = frame + l.icv;
    } else {
      job->iv = frame + l.iv;
      job->cipher_start_src_offset_in_bytes = l.payload - l.esp;
      job->msg_len_to_cipher_in_bytes = l.payload_len;
      job->dst = frame + l.payload;
      job->auth_tag_output = s.tag;
      std::memcpy(s.icv, frame + l.icv, s.icv_bytes);
    }
    // HMAC over SPI .. end of the ciphertext; with ESN, then the sequence number's high half
    // (RFC 4303 2.2.1), which a job can only take from the same buffer: it is written where the
    // ICV goes (sealing writes the ICV over it once the hash is done; opening puts the received
    // ICV back when the job is retired).
    uint32_t hashed = l.icv - l.esp;
    if (sa.esn) {
      store_be32(frame + l.icv, static_cast<uint32_t>(op.seq >> 32));
      hashed += kSeqHighBytes;
      s.restore_icv = s.open;
    }
    job->hash_alg = IMB_AUTH_HMAC_SHA_1;
    job->hash_start_src_offset_in_bytes = 0;
    job->msg_len_to_hash_in_bytes = hashed;
    job->auth_tag_output_len_in_bytes = kHmacSha1IcvBytes;
    job->u.HMAC._hashed_auth_key_xor_ipad = k.cbc.ipad;
    job->u.HMAC._hashed_auth_key_xor_opad = k.cbc.opad;
    return;
  }

  // AES-GCM and ChaCha20-Poly1305: nonce = salt | IV, AAD = SPI | [seq high |] seq low.
  s.icv_bytes = kAeadTagBytes;
  esp_aead_nonce(sa.salt.data(), frame + l.iv, s.nonce);
  const uint32_t aad_len = esp_aad(sa.spi, op.seq, sa.esn, s.aad);
  uint8_t* payload = frame + l.payload;
  job->src = payload;
  job->dst = payload;
  job->cipher_start_src_offset_in_bytes = 0;
  job->msg_len_to_cipher_in_bytes = l.payload_len;
  job->hash_start_src_offset_in_bytes = 0;
  job->msg_len_to_hash_in_bytes = l.payload_len;
  job->iv = s.nonce;
  job->iv_len_in_bytes = kAeadNonceBytes;
  job->auth_tag_output_len_in_bytes = kAeadTagBytes;
  if (!s.open) {
    job->auth_tag_output = frame + l.icv;
  } else {
    job->auth_tag_output = s.tag;
    std::memcpy(s.icv, frame + l.icv, s.icv_bytes);
  }
  if (sa.cipher == Cipher::kChacha20Poly1305) {
    job->cipher_mode = IMB_CIPHER_CHACHA20_POLY1305;
    job->hash_alg = IMB_AUTH_CHACHA20_POLY1305;
    job->enc_keys = k.chacha;
    job->dec_keys = k.chacha;
    job->key_len_in_bytes = sizeof k.chacha;
    job->u.CHACHA20_POLY1305.aad = s.aad;
    job->u.CHACHA20_POLY1305.aad_len_in_bytes = aad_len;
    job->u.CHACHA20_POLY1305.ctx = nullptr;
  } else {
    job->cipher_mode = IMB_CIPHER_GCM;
    job->hash_alg = IMB_AUTH_AES_GMAC;
    job->enc_keys = &k.gcm;
    job->dec_keys = &k.gcm;
    job->key_len_in_bytes = cipher_key_bytes(sa.cipher);
    job->u.GCM.aad = s.aad;
    job->u.GCM.aad_len_in_bytes = aad_len;
    job->u.GCM.ctx = nullptr;
  }
}

// A completed job: the op's result, with the ICV compared in constant time when opening.
void EspIpsecMb::Engine::retire(IMB_JOB* job) {
  EspCryptoOp& op = *static_cast<EspCryptoOp*>(job->user_data);
  const Scratch& s = *static_cast<const Scratch*>(job->user_data2);
  if (s.restore_icv) std::memcpy(op.frame + op.layout.icv, s.icv, kSeqHighBytes);
  if (job->status != IMB_STATUS_COMPLETED) {
    op.result = kCryptoError;
  } else if (s.open && CRYPTO_memcmp(s.tag, s.icv, s.icv_bytes) != 0) {
    op.result = kBadIcv;
  } else {
    op.result = DropReason::kNone;
  }
}

bool EspIpsecMb::available() {
  static const bool ok = [] {
    try {
      IMB_ARCH arch;
      new_manager(&arch);
      return true;
    } catch (const std::runtime_error&) {
      return false;
    }
  }();
  return ok;
}

std::string EspIpsecMb::describe() {
  try {
    IMB_ARCH arch;
    const Manager m = new_manager(&arch);
    return std::string("intel-ipsec-mb ") + imb_get_version_str() + ", " + arch_description(m.get(), arch);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

std::shared_ptr<EspIpsecMb::Keys> EspIpsecMb::make_keys(const SaTable& table) { return std::make_shared<Keys>(table); }
void EspIpsecMb::forget(Keys& keys, uint32_t i) { keys.forget(i); }

EspIpsecMb::EspIpsecMb(std::shared_ptr<Keys> keys) : engine_(std::make_unique<Engine>()) {
  IMB_ARCH arch;
  engine_->mgr = new_manager(&arch);
  // GCM key data is laid out for the code path that made it.
  if (arch != keys->arch()) throw std::logic_error("intel-ipsec-mb: engine and key store chose different code paths");
  engine_->keys = std::move(keys);
}

EspIpsecMb::~EspIpsecMb() = default;

void EspIpsecMb::run(std::span<EspCryptoOp> ops) {
  Engine& e = *engine_;
  if (e.scratch.size() < ops.size()) e.scratch.resize(ops.size());
  IMB_MGR* m = e.mgr.get();
  // A job handed back is read before the next IMB_GET_NEXT_JOB, which may reuse its slot; and
  // every IMB_SUBMIT_JOB follows its own IMB_GET_NEXT_JOB (submitting a slot twice never returns).
  for (size_t i = 0; i < ops.size(); ++i) {
    e.prepare(IMB_GET_NEXT_JOB(m), ops[i], e.scratch[i]);
    for (IMB_JOB* done = IMB_SUBMIT_JOB(m); done != nullptr; done = IMB_GET_COMPLETED_JOB(m)) Engine::retire(done);
  }
  while (IMB_JOB* done = IMB_FLUSH_JOB(m)) Engine::retire(done);
}

}  // namespace tandem::ipsec

#else  // !TANDEM_HAVE_IPSEC_MB

namespace tandem::ipsec {

namespace {
[[noreturn]] void absent() {
  throw std::logic_error("intel-ipsec-mb is not in this build (scripts/fetch-ipsec-mb.sh, then cmake again)");
}
}  // namespace

class EspIpsecMb::Keys {};
struct EspIpsecMb::Engine {};

bool EspIpsecMb::available() { return false; }
std::string EspIpsecMb::describe() { return "intel-ipsec-mb: not in this build"; }
std::shared_ptr<EspIpsecMb::Keys> EspIpsecMb::make_keys(const SaTable&) { absent(); }
void EspIpsecMb::forget(Keys&, uint32_t) {}
EspIpsecMb::EspIpsecMb(std::shared_ptr<Keys>) { absent(); }
EspIpsecMb::~EspIpsecMb() = default;
void EspIpsecMb::run(std::span<EspCryptoOp>) { absent(); }

}  // namespace tandem::ipsec

#endif
