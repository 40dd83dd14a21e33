# shellcheck shell=bash
# description: the crypto cores, the ESP gateway and RSA: their tests (the GPU kernels against the CPU, frame for frame), then bench crypto (ESP both ways: OpenSSL and intel-ipsec-mb on 1 and all cores vs the GPU kernels, host to host with overlapped batches, against the PCIe bound; RSA-2048 OpenSSL vs GPU). SIZES= the ESP sizes (default 64,1420,imix); TABLES=1 also runs the paper tables (--apunet --batch-sweep, about 2.5 min) into bench_crypto_tables.json and plots them where matplotlib is
LOG="$OUT/crypto.log"
for t in aes_test chacha_test hmac_test digest_test esp_test esp_gpu_test esp_ipsecmb_test rsa_test sa_file_test replay_window_test; do
  logged "$t" 300 "./build-device/tests/$t" --gtest_brief=1
done
logged "bench crypto" 480 "$T" bench crypto --threads "1,$(nproc)" --sizes "${SIZES:-64,1420,imix}" --json "$OUT/bench_crypto.json"
if [ -n "${TABLES:-}" ]; then
  logged "bench crypto tables" 420 "$T" bench crypto --no-esp --no-rsa --apunet --batch-sweep --threads "$(nproc)" --json "$OUT/bench_crypto_tables.json"
  if python3 -c "import matplotlib" 2>/dev/null; then logged "plot_crypto" 120 python3 tools/plot_crypto.py "$OUT/bench_crypto_tables.json" --out "$OUT"; else note "no matplotlib: plot with tools/plot_crypto.py bench_crypto_tables.json"; fi
fi
grep -E "^==|^exit|PASSED|FAILED|^bench crypto|^cipher|^workload|identical|DIFFERENT|MISMATCH| - *$|kernel|^APUNet|^algorithm|^(ipv4|ipv6|aho-corasick|chacha20|poly1305|sha1|sha-2|rsa-2048) |^(aes-128-cbc|md5):|^ +batch |^ +[0-9]+ \|" "$LOG" | tail -200
exit 0
