"""`tandem run --app ipsec` against an independent ESP implementation, scapy's SecurityAssociation
(with python `cryptography`), for every suite: scapy decrypts and authenticates every ESP packet
Tandem sends and gets back the packet Tandem was given; Tandem decrypts what scapy encrypts and
gives back scapy's inner packets; tampered and replayed copies are dropped with their reason;
packets no SA selects pass unchanged. Also: the SA file's errors never quote a key. And the real
captures (data/pcap) through a tunnel of every suite and back: what the selectors hold goes out as
ESP (scapy opens a sample of it), the rest unchanged; the ESP fed back with the inbound SAs gives
back every original packet byte for byte (the IP datagram as sent, its Ethernet addresses kept;
VLAN tags and Ethernet trailer padding are not part of it). With a GPU, every real-capture run again
on the resident path, whose output must be the CPU's, byte for byte."""
import ipaddress
import json
import os
import random
import struct

from e2e_util import SKIP, Checker, args, run, tmpdir

try:
    from scapy.all import IP, IPv6, UDP, TCP, Ether, Raw, rdpcap, wrpcap
    from scapy.layers.ipsec import ESP, SecurityAssociation
    from scapy.utils import RawPcapReader, checksum
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


# The real-capture round trip: (SPI, tandem cipher, key bytes incl. salt, scapy algo, auth, outer
# family, selector), first match wins. Every suite, IPv4 and IPv6 inside IPv4 and IPv6 tunnels;
# the rest of each capture (other hosts, 10/8 to 173.194/16, ...) bypasses the tunnels.
REAL_SAS = [
    (0x3001, "aes-128-gcm", 20, "AES-GCM", None, 4, ("10.0.0.0/16", "212.199.0.0/16")),
    (0x3002, "aes-128-cbc", 16, "AES-CBC", "HMAC-SHA1-96", 4, ("212.0.0.0/8", "10.0.0.0/8")),
    (0x3003, "chacha20-poly1305", 36, "CHACHA20-POLY1305", None, 6, ("173.194.0.0/16", "0.0.0.0/0")),
    (0x3004, "aes-256-gcm", 36, "AES-GCM", None, 4, ("2601::/16", "::/0")),
    (0x3005, "aes-128-gcm", 20, "AES-GCM", None, 6, ("fe80::/10", "::/0")),
    (0x3006, "chacha20-poly1305", 36, "CHACHA20-POLY1305", None, 6, ("2607::/16", "2601::/16")),
    (0x3007, "aes-128-cbc", 16, "AES-CBC", "HMAC-SHA1-96", 6, ("0.0.0.0/0", "192.168.0.0/16")),
]
TUNNEL = {4: ("192.0.2.1", "198.51.100.1"), 6: ("2001:db8::1", "2001:db8::2")}


def ip_datagram(frame):
    """Where a frame's IP datagram lies, as a receiver that checks the headers sees it: (offset,
    length, source, destination, protocol), or None for a frame without a well-formed IPv4/IPv6
    datagram (not IP, truncated, a wrong IPv4 header checksum). Up to two VLAN tags."""
    if len(frame) < 14:
        return None
    etype, off = struct.unpack("!H", frame[12:14])[0], 14
    for _ in range(2):
        if etype not in (0x8100, 0x88A8):
            break
        if len(frame) < off + 4:
            return None
        etype, off = struct.unpack("!H", frame[off + 2:off + 4])[0], off + 4
    cap = len(frame) - off
    if etype == 0x0800:
        if cap < 20 or frame[off] >> 4 != 4:
            return None
        ihl, total = (frame[off] & 15) * 4, struct.unpack("!H", frame[off + 2:off + 4])[0]
        if ihl < 20 or ihl > cap or total < ihl or total > cap or checksum(frame[off:off + ihl]) != 0:
            return None
        return (off, total, ipaddress.IPv4Address(frame[off + 12:off + 16]),
                ipaddress.IPv4Address(frame[off + 16:off + 20]), frame[off + 9])
    if etype == 0x86DD:
        if cap < 40 or frame[off] >> 4 != 6:
            return None
        plen = struct.unpack("!H", frame[off + 4:off + 6])[0]
        if plen == 0 or 40 + plen > cap:
            return None
        return (off, 40 + plen, ipaddress.IPv6Address(frame[off + 8:off + 24]),
                ipaddress.IPv6Address(frame[off + 24:off + 40]), frame[off + 6])
    return None


def real_captures(a, c, d):
    """Each capture out through the tunnels and back in; see the module's docstring."""
    rng = random.Random(4303)
    sas, lines = [], []
    for spi, cipher, key_len, algo, auth, fam, (sel_src, sel_dst) in REAL_SAS:
        key = bytes(rng.randrange(256) for _ in range(key_len))
        akey = bytes(rng.randrange(256) for _ in range(20)) if auth else b""
        authf = f" auth=hmac-sha1-96 authkey={akey.hex()}" if auth else ""
        gw, peer = TUNNEL[fam]
        for direction in ("out", "in"):
            lines.append(f"dir={direction} spi={spi:#x} src={gw} dst={peer} cipher={cipher} key={key.hex()}{authf} "
                         f"selector={sel_src},{sel_dst}")
        kw = dict(crypt_algo=algo, crypt_key=key)
        if auth:
            kw.update(auth_algo=auth, auth_key=akey)
        outer = IP(src=gw, dst=peer) if fam == 4 else IPv6(src=gw, dst=peer)
        sas.append(dict(spi=spi, fam=fam, gw=gw, peer=peer, src=ipaddress.ip_network(sel_src),
                        dst=ipaddress.ip_network(sel_dst), scapy=SecurityAssociation(ESP, spi=spi, tunnel_header=outer, **kw)))
    sa_file = os.path.join(d, "real.sa")
    with open(sa_file, "w") as f:
        f.write("\n".join(lines) + "\n")

    def run_json(pcap_in, out, tag, device="cpu"):
        j = os.path.join(d, f"{tag}.json")
        rc, so, se = run([a.tandem, "run", "--app", "ipsec", "--sa", sa_file, "--pcap", pcap_in, "--out", out,
                          "--device", device, "--workers", "1", "--verify", "--json", j])
        c.check(rc == 0, f"{tag}: exit {rc}: {(so + se)[-300:]}")
        return json.load(open(j)) if rc == 0 else None

    # With a GPU, every run again through the resident path: the same file, byte for byte.
    rc, so, se = run([a.tandem, "run", "--app", "ipsec", "--sa", sa_file, "--gen", "count=10", "--device", "gpu"])
    gpu = "no usable GPU" not in se and "no GPU" not in se
    print("real captures: " + ("each run again on the GPU (resident path)" if gpu else "no GPU: the CPU runs only"), flush=True)

    def same_on_gpu(pcap_in, out, rep, tag):
        if not gpu or rep is None:
            return
        out_gpu = out + ".gpu.pcap"
        rep_gpu = run_json(pcap_in, out_gpu, tag + " gpu", "gpu")
        if rep_gpu is None:
            return
        c.check(rep_gpu["device"].startswith("gpu") and rep_gpu["resident"]["cpu_batches"] == 0,
                f"{tag} gpu: not all on the GPU: {rep_gpu.get('device')} {rep_gpu.get('resident')}")
        for k in ("received", "forwarded", "dropped", "forwarded_per_port", "drops"):
            c.check(rep_gpu[k] == rep[k], f"{tag} gpu: {k} {rep_gpu[k]} != the CPU's {rep[k]}")
        c.check(open(out_gpu, "rb").read() == open(out, "rb").read(), f"{tag} gpu: the output differs from the CPU's")

    def balanced(rep, n_in, tag):
        c.check(rep["received"] == n_in, f"{tag}: received {rep['received']} of {n_in} packets")
        c.check(rep["received"] == rep["forwarded"] + rep["dropped"], f"{tag}: received != forwarded + dropped: {rep}")
        c.check(sum(rep["drops"].values()) == rep["dropped"], f"{tag}: drop reasons {rep['drops']} != {rep['dropped']}")
        c.check(rep["verify"]["mismatches"] == 0 and rep["verify"]["checked"] == rep["forwarded"],
                f"{tag}: --verify {rep['verify']}")

    used = {s["spi"]: 0 for s in sas}
    for name in ("many-protocols", "tls2"):
        cap = os.path.join(a.source_dir, "data/pcap", name + ".pcap")
        frames = [bytes(data) for data, _ in RawPcapReader(cap)]
        # What the gateway must do with each frame: (frame, its datagram, the SA or None), or drop it.
        fwd, drops = [], 0
        for fr in frames:
            dg = ip_datagram(fr)
            if dg is None or dg[4] == 50:  # not IP, malformed, or ESP (no SA has its SPI)
                drops += 1
                continue
            sa = next((s for s in sas if dg[2].version == s["src"].version and dg[2] in s["src"] and dg[3] in s["dst"]), None)
            fwd.append((fr, dg, sa))
        n_esp = sum(sa is not None for _, _, sa in fwd)
        per_sa = {f'{s["spi"]:#x}': sum(sa is s for _, _, sa in fwd) for s in sas}
        for s in sas:
            used[s["spi"]] += per_sa[f'{s["spi"]:#x}']
        print(f"{name}: {len(frames)} frames, {n_esp} for the tunnels {per_sa}, {len(fwd) - n_esp} bypass, {drops} dropped",
              flush=True)
        c.check(n_esp > 100 and len(fwd) - n_esp > 10, f"{name}: too little traffic for the tunnels or around them")

        # Outbound.
        enc = os.path.join(d, f"{name}-esp.pcap")
        rep = run_json(cap, enc, f"{name} out")
        same_on_gpu(cap, enc, rep, f"{name} out")
        if rep is None:
            continue
        balanced(rep, len(frames), f"{name} out")
        c.check(rep["dropped"] == drops, f"{name} out: {rep['dropped']} dropped, expected {drops}: {rep['drops']}")
        c.check(rep["forwarded_per_port"] == {k: v for k, v in (("0", n_esp), ("2", len(fwd) - n_esp)) if v},
                f"{name} out: per port {rep['forwarded_per_port']}, expected {n_esp} ESP and {len(fwd) - n_esp} bypassed")
        sent = [bytes(data) for data, _ in RawPcapReader(enc)]
        c.check(len(sent) == len(fwd), f"{name} out: {len(sent)} frames written, expected {len(fwd)}")
        seq = {s["spi"]: 0 for s in sas}
        bad_esp = bad_bypass = opened = tried = 0
        for (orig, dg, sa), out in zip(fwd, sent):
            if sa is None:
                bad_bypass += out != orig
                continue
            seq[sa["spi"]] += 1
            p = Ether(out)
            o = p[IP] if sa["fam"] == 4 else p[IPv6]
            ok = (out[:12] == orig[:12] and ESP in p and p[ESP].spi == sa["spi"] and p[ESP].seq == seq[sa["spi"]] and
                  o.src == sa["gw"] and o.dst == sa["peer"])
            bad_esp += not ok
            if ok and seq[sa["spi"]] <= 25:  # scapy opens the first packets of each SA
                tried += 1
                try:
                    inner = sa["scapy"].decrypt(o.copy())
                    opened += bytes(inner) == orig[dg[0]:dg[0] + dg[1]]
                except Exception as e:  # noqa: BLE001 (any failure is a failed check)
                    print(f"{name}: scapy could not open SPI {sa['spi']:#x} seq {seq[sa['spi']]}: {e}")
        c.check(bad_esp == 0, f"{name} out: {bad_esp} ESP frames with a wrong SPI, sequence number, tunnel or MACs")
        c.check(bad_bypass == 0, f"{name} out: {bad_bypass} bypassed frames changed")
        c.check(opened == tried > 0, f"{name} out: scapy opened {opened} of {tried} ESP frames to the original datagram")

        # Inbound: the same SA file's inbound SAs open what came out; the bypassed frames pass again.
        dec = os.path.join(d, f"{name}-clear.pcap")
        rep = run_json(enc, dec, f"{name} in")
        same_on_gpu(enc, dec, rep, f"{name} in")
        if rep is None:
            continue
        balanced(rep, len(sent), f"{name} in")
        c.check(rep["dropped"] == 0, f"{name} in: drops {rep['drops']}")
        c.check(rep["forwarded_per_port"] == {k: v for k, v in (("1", n_esp), ("2", len(fwd) - n_esp)) if v},
                f"{name} in: per port {rep['forwarded_per_port']}")
        back = [bytes(data) for data, _ in RawPcapReader(dec)]
        c.check(len(back) == len(fwd), f"{name} in: {len(back)} frames written, expected {len(fwd)}")
        bad = 0
        for (orig, dg, sa), got in zip(fwd, back):
            if sa is None:
                bad += got != orig
                continue
            # The original datagram behind the original MACs, with its own EtherType: scapy's
            # reading of it, and byte for byte.
            want = orig[:12] + (b"\x08\x00" if dg[2].version == 4 else b"\x86\xdd") + orig[dg[0]:dg[0] + dg[1]]
            p = Ether(got)
            layer = IP if dg[2].version == 4 else IPv6
            ok = got == want and layer in p and bytes(p[layer]) == orig[dg[0]:dg[0] + dg[1]] and \
                p.src == Ether(orig).src and p.dst == Ether(orig).dst
            if not ok and bad < 3:
                print(f"{name} in: frame {got.hex()[:120]}... expected {want.hex()[:120]}...")
            bad += not ok
        c.check(bad == 0, f"{name} in: {bad} of {len(fwd)} frames differ from the originals")
        print(f"{name}: scapy opened {opened} of {tried} sampled ESP frames; {len(back) - bad} of {len(fwd)} frames "
              f"came back as sent", flush=True)
    c.check(all(used.values()), f"real captures: an SA that no packet used: {used}")


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
    rc, so, se = run([a.tandem, "run", "--app", "ipsec", "--sa", bad, "--gen", "count=10", "--device", "gpu",
                      "--gpu-path", "offload"])
    c.check(rc != 0 and "resident path only" in se, f"--gpu-path offload refused: {rc} {se}")

    real_captures(a, c, d)
    c.done()


if __name__ == "__main__":
    main()
