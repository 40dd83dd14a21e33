#!/usr/bin/env bash
# Run HERE (a machine with package access) before sending the tree to the GPU machine, which has
# no network and lacks CLI11, nlohmann-json, libpcap and scapy. Downloads the Debian packages,
# unpacks them into .deps/root (git-ignored; carried to the device) and the scapy wheel into
# .deps/whl, DPDK's headers and static libraries into .deps/dpdk (scripts/fetch-dpdk.sh), and
# intel-ipsec-mb's shared object and header into .deps/ipsec-mb (scripts/fetch-ipsec-mb.sh; the
# build finds it there and links it with an RPATH to that directory).
# scripts/device-run.sh uses them.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs .deps/root .deps/whl
(cd .deps/debs && apt-get download libcli11-dev nlohmann-json3-dev libpcap0.8-dev libpcap0.8 \
   libdbus-1-3 libibverbs1 libnl-3-200 libnl-route-3-200 libhyperscan-dev libhyperscan5 >/dev/null)
for d in .deps/debs/*.deb; do dpkg -x "$d" .deps/root; done
rm -rf .deps/debs
# Hyperscan is linked as the shared object (10 MiB; LD_LIBRARY_PATH reaches it there): its static
# archives (28 MiB) would not fit what a call may carry.
rm -f .deps/root/usr/lib/x86_64-linux-gnu/libhs.a .deps/root/usr/lib/x86_64-linux-gnu/libhs_runtime.a \
  .deps/root/usr/lib/x86_64-linux-gnu/libhs_runtime.so*
scripts/fetch-dpdk.sh .deps/dpdk
scripts/fetch-ipsec-mb.sh .deps/ipsec-mb
# testpmd for `bench io` (the device suite io): its packages only; the machine unpacks them.
scripts/fetch-testpmd.sh .deps/testpmd && rm -rf .deps/testpmd/root
# Shared data the GPU machine's tests and benches read (never committed: carried in .deps): the
# real URL list (NDN), the ClassBench filter sets (firewall), the Emerging Threats rules (DPI).
if [ -d ../shared/data/names ]; then
  mkdir -p .deps/shared/names && cp ../shared/data/names/*.csv.gz .deps/shared/names/
fi
if [ -d ../shared/data/classbench/filters ]; then
  mkdir -p .deps/shared/classbench/filters && cp ../shared/data/classbench/filters/*.gz .deps/shared/classbench/filters/
fi
if [ -d ../shared/data/ids ]; then
  mkdir -p .deps/shared/ids && cp -r ../shared/data/ids/. .deps/shared/ids/
fi
# iproute2's ip and the libraries it needs (the GPU machine has none; the live suite makes network
# namespaces with it), run through the dynamic loader so that its libraries reach it alone.
mkdir -p .deps/iproute/bin .deps/iproute/lib
cp "$(command -v ip)" .deps/iproute/ip.real
for l in $(ldd .deps/iproute/ip.real | awk '/=>/ {print $3}' | grep -v -E 'libc\.so'); do cp "$l" .deps/iproute/lib/; done
cat > .deps/iproute/bin/ip <<'SH'
#!/bin/sh
d=$(dirname "$(readlink -f "$0")")/..
exec /lib64/ld-linux-x86-64.so.2 --library-path "$d/lib" "$d/ip.real" "$@"
SH
chmod +x .deps/iproute/bin/ip
python3 -m pip download --quiet --no-deps --only-binary=:all: -d .deps/whl scapy pycparser
du -sh .deps
