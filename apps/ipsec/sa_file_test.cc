// SA files: every field read as written, every malformed or inconsistent line refused with the file,
// the line and the field named, and no key ever in a message.
#include "apps/ipsec/sa_file.h"

#include <gtest/gtest.h>

#include <string>

#include "core/table_reader.h"
#include "tests/test_util.h"

namespace tandem::ipsec {
namespace {

const std::string kKey16 = "0x00112233445566778899aabbccddeeff";
const std::string kAuth20 = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";
const std::string kGcm128 = "000102030405060708090a0b0c0d0e0f" "deadbeef";
const std::string kChacha = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" "cafebabe";

std::string out_cbc(const std::string& extra = "") {
  return "dir=out spi=0x1001 src=192.0.2.1 dst=198.51.100.1 cipher=aes-128-cbc key=" + kKey16 +
         " auth=hmac-sha1-96 authkey=" + kAuth20 + " selector=10.1.0.0/16,10.2.0.0/16" + extra + "\n";
}

TEST(SaFile, ReadsEveryField) {
  const std::string text = "# gateway A\n\n" + out_cbc() +
                           "dir=in spi=4097 src=198.51.100.1 dst=192.0.2.1 cipher=aes-128-gcm key=" + kGcm128 +
                           " replay-window=1024 esn=yes  # GCM, salt last\n"
                           "dir=out spi=0x2002 src=2001:db8::1 dst=2001:db8::2 cipher=chacha20-poly1305 key=" +
                           kChacha + " selector=2001:db8:1:ff::5/48,::/0\n";
  const SaFile f = load_sa_file(test::write_temp_file("sa", "good.sa", text));
  ASSERT_EQ(f.sas.size(), 3u);
  const Sa& a = f.sas[0];
  EXPECT_EQ(a.dir, SaDir::kOut);
  EXPECT_EQ(a.spi, 0x1001u);
  EXPECT_EQ(format_addr(a.src), "192.0.2.1");
  EXPECT_EQ(format_addr(a.dst), "198.51.100.1");
  EXPECT_EQ(a.cipher, Cipher::kAes128Cbc);
  EXPECT_EQ(a.key.size(), 16u);
  EXPECT_EQ(a.key[0], 0x00);
  EXPECT_EQ(a.key[15], 0xff);
  EXPECT_TRUE(a.salt.empty());
  EXPECT_EQ(a.auth, Auth::kHmacSha1_96);
  EXPECT_EQ(a.auth_key.size(), 20u);
  EXPECT_EQ(format_prefix(a.sel_src), "10.1.0.0/16");
  EXPECT_EQ(a.line, 3u);
  const Sa& b = f.sas[1];
  EXPECT_EQ(b.dir, SaDir::kIn);
  EXPECT_EQ(b.spi, 4097u);
  EXPECT_EQ(b.key.size(), 16u);
  ASSERT_EQ(b.salt.size(), 4u);
  EXPECT_EQ(b.salt[0], 0xde);
  EXPECT_EQ(b.replay_window, 1024u);
  EXPECT_TRUE(b.esn);
  const Sa& c = f.sas[2];
  EXPECT_EQ(c.src.family, 6);
  EXPECT_EQ(c.key.size(), 32u);
  EXPECT_EQ(c.salt.size(), 4u);
  EXPECT_EQ(format_prefix(c.sel_src), "2001:db8:1::/48");  // host bits cleared
  EXPECT_EQ(c.sel_dst.addr.family, 6);
  EXPECT_EQ(c.replay_window, 64u);
  // Selectors match by prefix, within one family.
  IpAddr x;
  x.family = 4;
  x.bytes = {10, 1, 200, 7};
  EXPECT_TRUE(a.sel_src.contains(x));
  x.bytes[1] = 3;
  EXPECT_FALSE(a.sel_src.contains(x));
  EXPECT_FALSE(c.sel_dst.contains(x));  // an IPv4 address is in no IPv6 prefix
  IpAddr y;
  y.family = 6;
  y.bytes = {0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0xab, 0xcd};
  EXPECT_TRUE(c.sel_src.contains(y));
  y.bytes[5] = 2;
  EXPECT_FALSE(c.sel_src.contains(y));
  EXPECT_TRUE(c.sel_dst.contains(y));
}

// A file with one bad line: the load fails naming the file, line 2 and `needle`, and no key.
void expect_refused(const std::string& line, const std::string& needle) {
  const std::string path = test::write_temp_file("sa", "bad.sa", out_cbc() + line + "\n");
  try {
    load_sa_file(path);
    ADD_FAILURE() << "accepted: " << line;
  } catch (const TableError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad.sa:2"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << msg;
    for (const std::string& secret : {kKey16.substr(2), kAuth20, kGcm128, kChacha}) {
      EXPECT_EQ(msg.find(secret.substr(0, 16)), std::string::npos) << "key material in: " << msg;
    }
  }
}

TEST(SaFile, RefusesWhatIsWrongNamingTheLineAndNeverAKey) {
  const std::string in = "dir=in spi=0x3003 src=198.51.100.1 dst=192.0.2.1 ";
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " color=blue", "unknown field 'color'");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " spi=5000", "given twice");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " stray", "not a key=value");
  expect_refused("dir=in spi=0x3003 src=198.51.100.1 cipher=aes-128-gcm key=" + kGcm128, "missing field dst");
  expect_refused("dir=sideways spi=0x3003 src=1.2.3.4 dst=1.2.3.5 cipher=aes-128-gcm key=" + kGcm128, "dir must be");
  expect_refused("dir=in spi=17 src=1.2.3.4 dst=1.2.3.5 cipher=aes-128-gcm key=" + kGcm128, "reserved");
  expect_refused("dir=in spi=0x1ffffffff src=1.2.3.4 dst=1.2.3.5 cipher=aes-128-gcm key=" + kGcm128, "spi is not");
  expect_refused("dir=in spi=0x3003 src=1.2.3.256 dst=1.2.3.5 cipher=aes-128-gcm key=" + kGcm128, "src is not");
  expect_refused("dir=in spi=0x3003 src=1.2.3.4 dst=2001:db8::1 cipher=aes-128-gcm key=" + kGcm128, "different families");
  expect_refused(in + "cipher=aes-512-ecb key=" + kGcm128, "cipher must be");
  expect_refused(in + "cipher=aes-128-gcm key=" + kKey16, "takes 20 (the key, then a 4-byte salt)");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + "0", "not a hex string");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128.substr(0, 38) + "zz", "not a hex string");
  expect_refused(in + "cipher=aes-128-cbc key=" + kKey16, "needs auth=hmac-sha1-96");
  expect_refused(in + "cipher=aes-128-cbc key=" + kKey16 + " auth=hmac-md5 authkey=" + kAuth20, "auth must be");
  expect_refused(in + "cipher=aes-128-cbc key=" + kKey16 + " auth=hmac-sha1-96 authkey=" + kAuth20.substr(0, 38),
                 "authkey of 19 bytes");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " auth=hmac-sha1-96 authkey=" + kAuth20, "auth must be none");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " authkey=" + kAuth20, "authkey without");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " selector=10.0.0.0/8", "SRC_PREFIX,DST_PREFIX");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " replay-window=16", "replay-window must be");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " esn=maybe", "esn must be");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " esn=yes replay-window=0", "needs a replay window");
  const std::string out = "dir=out spi=0x3003 src=1.2.3.4 dst=1.2.3.5 cipher=aes-128-gcm key=" + kGcm128;
  expect_refused(out, "missing field selector");
  expect_refused(out + " selector=10.0.0.0/8", "SRC_PREFIX,DST_PREFIX");
  expect_refused(out + " selector=10.0.0.0/33,10.0.0.0/8", "selector source");
  expect_refused(out + " selector=10.0.0.0/8,::/0x", "selector destination");
  expect_refused(out + " selector=10.0.0.0/8,::/0", "different families");
  expect_refused(out + " selector=10.0.0.0/8,0.0.0.0/0 replay-window=64", "replay-window is for inbound");
  expect_refused(out_cbc().substr(0, out_cbc().size() - 1), "a second outbound SA with spi 4097");
  // Keys written in shapes the parser refuses are not quoted either.
  expect_refused("key = " + kKey16 + " " + in + "cipher=aes-128-gcm", "not a key=value field");
  expect_refused(in + "cipher=aes-128-gcm key=\"" + kGcm128 + "\"", "key is not a hex string");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128.substr(0, 20) + "," + kGcm128.substr(20), "key is not a hex string");
  expect_refused(in + "cipher=aes-128-gcm keys=" + kGcm128, "unknown field 'keys'");
  expect_refused(in + "cipher=aes-128-gcm key=" + kGcm128 + " auth-key=" + kAuth20, "unknown field 'auth-key'");
}

TEST(SaFile, AnEmptyFileIsAnError) {
  EXPECT_THROW(load_sa_file(test::write_temp_file("sa", "empty.sa", "# nothing\n\n")), TableError);
  EXPECT_THROW(load_sa_file("/nonexistent/sa"), TableError);
}

}  // namespace
}  // namespace tandem::ipsec
