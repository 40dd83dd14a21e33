# shellcheck shell=bash
# description: the crypto cores and the ESP gateway: their tests (the GPU's digests too), then bench crypto (OpenSSL on 1 and all cores vs the GPU seal kernel, kernel-only and host to host, against the PCIe bound)
LOG="$OUT/crypto.log"
for t in aes_test chacha_test hmac_test digest_test esp_test esp_gpu_test sa_file_test replay_window_test; do
  logged "$t" 300 "./build-device/tests/$t" --gtest_brief=1
done
logged "bench crypto" 540 "$T" bench crypto --threads "1,$(nproc)" --json "$OUT/bench_crypto.json"
grep -E "^==|^exit|PASSED|FAILED|^bench crypto|^cipher|identical|DIFFERENT" "$LOG" | tail -150
exit 0
