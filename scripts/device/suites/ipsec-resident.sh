# shellcheck shell=bash
# description: the ipsec app on the resident GPU path (issues 16 and 17; CIPHERS, SIZES, RESIDENT, BATCH, RX_THREADS, CPU_WORKERS for other rows; SKIP_TESTS=1): esp_resident_test and the resident tests (every case in its own process), the real captures through the tunnels and back on the CPU and the GPU (outputs compared byte for byte), bench gpu-path for AES-128-CBC+HMAC-SHA1 and AES-128-GCM at 64 and 1,420 B (CPU batched 1/8/15 workers, resident persistent cells/packed), and a GPU fault through the CLI
LOG="$OUT/ipsec-resident.log"
[ -n "${SKIP_TESTS:-}" ] || (cd build-device && timeout 400 ctest -R "${TEST_FILTER:-EspResident|Resident}" -j4 --timeout 200 --output-on-failure) >> "$LOG" 2>&1
note "ctest exit: $?"
mkdir -p /tmp/ipr
# The e2e test's real-capture SAs (tests/e2e/test_ipsec.py REAL_SAS), with keys of this run.
python3 - /tmp/ipr/real.sa <<'PY'
import os, sys
sas = [(0x3001, "aes-128-gcm", 20, False, 4, "10.0.0.0/16,212.199.0.0/16"),
       (0x3002, "aes-128-cbc", 16, True, 4, "212.0.0.0/8,10.0.0.0/8"),
       (0x3003, "chacha20-poly1305", 36, False, 6, "173.194.0.0/16,0.0.0.0/0"),
       (0x3004, "aes-256-gcm", 36, False, 4, "2601::/16,::/0"),
       (0x3005, "aes-128-gcm", 20, False, 6, "fe80::/10,::/0"),
       (0x3006, "chacha20-poly1305", 36, False, 6, "2607::/16,2601::/16"),
       (0x3007, "aes-128-cbc", 16, True, 6, "0.0.0.0/0,192.168.0.0/16")]
tun = {4: ("192.0.2.1", "198.51.100.1"), 6: ("2001:db8::1", "2001:db8::2")}
with open(sys.argv[1], "w") as f:
    for spi, cipher, n, auth, fam, sel in sas:
        key = os.urandom(n).hex()
        a = f" auth=hmac-sha1-96 authkey={os.urandom(20).hex()}" if auth else ""
        for d in ("out", "in"):
            f.write(f"dir={d} spi={spi:#x} src={tun[fam][0]} dst={tun[fam][1]} cipher={cipher} key={key}{a} selector={sel}\n")
PY
same=0 differ=0
for cap in many-protocols tls2; do
  for way in out in; do
    if [ "$way" = out ]; then in_pcap=data/pcap/$cap.pcap; else in_pcap=/tmp/ipr/$cap-out-cpu.pcap; fi
    for dev in cpu gpu; do
      logged "real capture $cap $way on the $dev" 60 "$T" run --app ipsec --sa /tmp/ipr/real.sa --pcap "$in_pcap" \
        --out "/tmp/ipr/$cap-$way-$dev.pcap" --device "$dev" --workers 1 --verify
    done
    if cmp -s "/tmp/ipr/$cap-$way-cpu.pcap" "/tmp/ipr/$cap-$way-gpu.pcap"; then same=$((same + 1)); else differ=$((differ + 1)); fi
  done
done
note "real captures: $same outputs the same on the CPU and the GPU, $differ differ"
for cipher in ${CIPHERS:-aes-128-cbc aes-128-gcm}; do
  logged "bench gpu-path: ipsec $cipher" 300 "$T" bench gpu-path --app ipsec --sa-gen 1024 --sa-cipher "$cipher" \
    --cores 1-15 --cpu-workers "${CPU_WORKERS:-1,8,15}" --rx-threads "${RX_THREADS:-4,8,12}" --sizes "${SIZES:-64,1420}" \
    --resident "${RESIDENT:-persistent-cells,persistent-packed}" --batch "${BATCH:-1024}" --ring-slots 48 \
    --json "$OUT/bench_gpu_path_ipsec_$cipher.json"
done
logged "run with a GPU fault at batch 100, verified" 60 "$T" run --app ipsec --sa-gen 256 --sa-cipher aes-128-gcm \
  --ipsec-traffic both --gen count=1000000,dst=fib,size=64,seed=6 --device gpu --workers 2 --verify --inject-gpu-fault 100
grep -E "^==|^exit|PASSED|FAILED|Failure|tests passed|^path|^CPU|^GPU|ceilings|^  |^packets|^latency|^resident|^gpu error|^verify|^throughput|^real captures|^device|^dropped" "$LOG" | tail -120
exit 0
