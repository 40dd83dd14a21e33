"""`tandem run --app ipsec` against an independent ESP implementation, scapy's SecurityAssociation
(with python `cryptography`), for every suite: scapy decrypts and authenticates every ESP packet
Tandem sends and gets back the packet Tandem was given; Tandem decrypts what scapy encrypts and
gives back scapy's inner packets; tampered and replayed copies are dropped with their reason;
packets no SA selects pass unchanged. Also: the SA file's errors never quote a key."""
import json
import os
import random

from e2e_util import SKIP, Checker, args, run, tmpdir

try:
    from scapy.all import IP, IPv6, UDP, TCP, Ether, Raw, rdpcap, wrpcap
    from scapy.layers.ipsec import ESP, SecurityAssociation
    import cryptography  # noqa: F401  (scapy's ESP needs it for every cipher)
except ImportError as e:
    print(f"skipped: {e}")
    raise SystemExit(SKIP)

SUITES = [
    # (tandem cipher, key bytes incl. salt, scapy crypt algo, scapy auth algo, auth key bytes)
    ("aes-128-cbc", 16, "AES-CBC", "HMAC-SHA1-96", 20),
    ("aes-128-gcm", 20, "AES-GCM", None, 0),
    ("aes-256-gcm", 36, "AES-GCM", None, 0),
    ("chacha20-poly1305", 36, "CHACHA20-POLY1305", None, 0),
]
GW, PEER = "192.0.2.1", "198.51.100.1"


def cleartext(rng, n, v6=False):
    """Packets from 10.1.0.0/16 (fd00::/16) to anywhere, of many sizes."""
    pkts = []
    for i in range(n):
        size = rng.choice([0, 1, 15, 16, 17, 100, 500, 1000, 1400])
        l4 = UDP(sport=rng.randrange(1024, 65535), dport=4000) if i % 2 else TCP(sport=1234, dport=80, flags="A")
        if v6:
            ip = IPv6(src=f"fd00::{i + 1:x}", dst=f"2001:db8::{rng.randrange(1, 65535):x}", hlim=30)
        else:
            ip = IP(src=f"10.1.{i // 250}.{i % 250 + 1}", dst=f"172.16.{rng.randrange(256)}.{rng.randrange(1, 255)}", ttl=30, id=i)
        pkts.append(Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01") / ip / l4 / Raw(bytes(rng.randrange(256) for _ in range(size))))
    return pkts


def tandem_run(a, sa_file, pcap_in, out, d, extra=()):
    j = os.path.join(d, "run.json")
    rc, so, se = run([a.tandem, "run", "--app", "ipsec", "--sa", sa_file, "--pcap", pcap_in, "--out", out,
                      "--device", "cpu", "--verify", "--json", j, *extra])
    if rc != 0:
        return rc, so + se, None
    return rc, so + se, json.load(open(j))


def main():
    a = args()
    c = Checker()
    d = tmpdir()
    rng = random.Random(7)
    for cipher, key_len, algo, auth, auth_len in SUITES:
        key = bytes(rng.randrange(256) for _ in range(key_len))
        akey = bytes(rng.randrange(256) for _ in range(auth_len))
        authf = f" auth=hmac-sha1-96 authkey={akey.hex()}" if auth else ""
        sa_file = os.path.join(d, f"{cipher}.sa")
        with open(sa_file, "w") as f:
            f.write(f"dir=out spi=0x1001 src={GW} dst={PEER} cipher={cipher} key={key.hex()}{authf} selector=10.1.0.0/16,0.0.0.0/0\n")
            f.write(f"dir=out spi=0x1003 src={GW} dst={PEER} cipher={cipher} key={bytes(reversed(key)).hex()}{authf} selector=fd00::/16,::/0\n")
            f.write(f"dir=in spi=0x2002 src={PEER} dst={GW} cipher={cipher} key={key.hex()}{authf} selector=0.0.0.0/0,10.1.0.0/16\n")
        sa_kw = dict(crypt_algo=algo, crypt_key=key)
        if auth:
            sa_kw.update(auth_algo=auth, auth_key=akey)
        out_sa = SecurityAssociation(ESP, spi=0x1001, tunnel_header=IP(src=GW, dst=PEER), **sa_kw)
        out_sa6 = SecurityAssociation(ESP, spi=0x1003, tunnel_header=IP(src=GW, dst=PEER),
                                      **dict(sa_kw, crypt_key=bytes(reversed(key))))

        # Outbound: Tandem encrypts, scapy decrypts (the ICV checked) and must find the original.
        clear = cleartext(rng, 120) + cleartext(rng, 40, v6=True)
        bypass = Ether() / IP(src="11.0.0.1", dst="172.16.0.1") / UDP() / Raw(b"x" * 40)
        pin, pout = os.path.join(d, "in.pcap"), os.path.join(d, "out.pcap")
        wrpcap(pin, clear + [bypass])
        rc, text, rep = tandem_run(a, sa_file, pin, pout, d)
        c.check(rc == 0, f"{cipher} outbound run: {text[-300:]}")
        if rc != 0:
            continue
        c.check(rep["verify"]["mismatches"] == 0 and rep["verify"]["checked"] == len(clear) + 1,
                f"{cipher}: --verify {rep.get('verify')}")
        sent = rdpcap(pout)
        c.check(len(sent) == len(clear) + 1, f"{cipher}: {len(sent)} packets out")
        good = 0
        for orig, p in zip(clear, sent):
            try:
                sa = out_sa6 if IPv6 in orig else out_sa
                inner = sa.decrypt(p[IP].copy())  # decrypt() rewrites the packet it is given
                want = orig[IPv6] if IPv6 in orig else orig[IP]
                good += bytes(inner) == bytes(want)
            except Exception as e:  # noqa: BLE001 (any failure is a failed check)
                print(f"{cipher}: scapy could not open a packet: {e}")
        c.check(good == len(clear), f"{cipher}: scapy opened {good} of {len(clear)} ESP packets to the original")
        c.check(bytes(sent[-1]) == bytes(bypass), f"{cipher}: the bypassed packet changed")
        seqs = [p[ESP].seq for p in sent[:120]]
        c.check(seqs == list(range(1, 121)), f"{cipher}: sequence numbers {seqs[:5]}...")

        # Inbound: scapy encrypts for SA 0x2002, Tandem decrypts.
        in_sa = SecurityAssociation(ESP, spi=0x2002, tunnel_header=IP(src=PEER, dst=GW), **sa_kw)
        replies = [Ether(src="02:00:00:00:00:05", dst="02:00:00:00:00:06") /
                   IP(src=f"172.16.0.{i + 1}", dst=f"10.1.0.{i + 1}", ttl=40) / UDP(sport=5000, dport=999) /
                   Raw(bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 64, 700, 1300])))) for i in range(60)]
        esp = [Ether(src=r.src, dst=r.dst) / in_sa.encrypt(r[IP], seq_num=i + 1) for i, r in enumerate(replies)]
        tampered = Ether() / in_sa.encrypt(replies[5][IP], seq_num=200)  # fresh: not caught as a replay
        raw = bytearray(bytes(tampered))
        raw[-1] ^= 0x40
        replayed = esp[7]
        outside = Ether() / in_sa.encrypt(IP(src="172.16.0.1", dst="10.9.9.9") / UDP(), seq_num=100)
        wrpcap(pin, esp + [Ether(bytes(raw)), replayed, outside])
        rc, text, rep = tandem_run(a, sa_file, pin, pout, d)
        c.check(rc == 0, f"{cipher} inbound run: {text[-300:]}")
        if rc != 0:
            continue
        got = rdpcap(pout)
        c.check(len(got) == len(esp), f"{cipher}: {len(got)} packets decrypted of {len(esp)}")
        same = sum(bytes(g[IP]) == bytes(r[IP]) and g.src == r.src and g.dst == r.dst for g, r in zip(got, replies))
        c.check(same == len(replies), f"{cipher}: {same} of {len(replies)} decrypted packets are scapy's originals")
        drops = rep["drops"]
        c.check(drops.get("esp_bad_icv") == 1 and drops.get("esp_replayed") == 1 and drops.get("esp_selector_mismatch") == 1,
                f"{cipher}: drops {drops}")
        c.check(rep["verify"]["mismatches"] == 0, f"{cipher}: inbound --verify {rep.get('verify')}")

    # Errors name the line and field, never the key.
    bad = os.path.join(d, "bad.sa")
    secret = "00112233445566778899aabbccddeeff"
    with open(bad, "w") as f:
        f.write(f"dir=out spi=0x1001 src={GW} dst={PEER} cipher=aes-128-gcm key={secret} selector=10.0.0.0/8,0.0.0.0/0\n")
    rc, so, se = run([a.tandem, "run", "--app", "ipsec", "--sa", bad, "--gen", "count=10"])
    c.check(rc != 0 and "bad.sa:1" in se and "takes 20" in se and secret[:10] not in so + se, f"bad SA file: {rc} {se}")
    rc, so, se = run([a.tandem, "run", "--app", "ipsec", "--sa", bad, "--gen", "count=10", "--device", "gpu"])
    c.check(rc != 0 and "whole frames" in se, f"--device gpu refused: {rc} {se}")
    c.done()


if __name__ == "__main__":
    main()
