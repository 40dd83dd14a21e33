#!/usr/bin/env bash
# Fetches the pieces of Debian's DPDK that Tandem links: the headers and the static libraries of
# EAL, LPM, LPM6/FIB6, hash and ACL (the comparators of `tandem bench anchors`), and of ethdev with
# the drivers of the `dpdk:` live ports (virtual devices and common NICs), from the libdpdk-dev
# package, unpacked without installing (`apt-get download` + `dpkg -x`, no root, no
# systemd/udev/rdma packages that a full `apt-get install libdpdk-dev` drags in). Static linking
# keeps the binary free of librte_*.so, so the GPU machine (no network, no DPDK) needs only what it
# has: libc and libnuma.
#   scripts/fetch-dpdk.sh [DEST]    (default .deps/dpdk; DEST/include, DEST/lib)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.deps/dpdk}
[ -f "$dest/lib/librte_ethdev.a" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download libdpdk-dev >/dev/null 2>&1) || {
  echo "fetch-dpdk: cannot download libdpdk-dev (no package index? run apt-get update); DPDK comparators disabled" >&2
  exit 0
}
dpkg -x "$tmp"/libdpdk-dev_*.deb "$tmp/root"
mkdir -p "$dest/include" "$dest/lib"
cp -r "$tmp"/root/usr/include/dpdk/. "$dest/include/"
cp -r "$tmp"/root/usr/include/x86_64-linux-gnu/dpdk/. "$dest/include/"
# Keep in step with cmake/TandemDeps.cmake.
for l in acl fib rib lpm hash rcu net mbuf mempool mempool_ring ring eal telemetry kvargs \
  ethdev meter gso pci bus_pci bus_vdev net_af_packet net_memif net_ring net_tap net_pcap net_virtio \
  net_e1000 net_i40e net_ice net_iavf common_iavf; do
  cp "$tmp/root/usr/lib/x86_64-linux-gnu/librte_$l.a" "$dest/lib/"
done
dpkg-deb -f "$tmp"/libdpdk-dev_*.deb Version > "$dest/VERSION"
echo "fetch-dpdk: DPDK $(cat "$dest/VERSION") headers and static libraries in $dest ($(du -sh "$dest" | cut -f1))"
