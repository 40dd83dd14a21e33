# shellcheck shell=bash
# description: the crypto cores, the ESP gateway and RSA: their tests (the GPU kernels against the CPU, frame for frame), then bench crypto (ESP both ways: OpenSSL and intel-ipsec-mb on 1 and all cores vs the GPU kernels, host to host with overlapped batches, against the PCIe bound; RSA-2048 OpenSSL vs GPU). SIZES= the ESP sizes (default 64,1420,imix)
LOG="$OUT/crypto.log"
for t in aes_test chacha_test hmac_test digest_test esp_test esp_gpu_test esp_ipsecmb_test rsa_test sa_file_test replay_window_test; do
  logged "$t" 300 "./build-device/tests/$t" --gtest_brief=1
done
logged "bench crypto" 480 "$T" bench crypto --threads "1,$(nproc)" --sizes "${SIZES:-64,1420,imix}" --json "$OUT/bench_crypto.json"
grep -E "^==|^exit|PASSED|FAILED|^bench crypto|^cipher|^workload|identical|DIFFERENT| - *$|kernel" "$LOG" | tail -150
exit 0
