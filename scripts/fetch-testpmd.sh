#!/usr/bin/env bash
# Fetches DPDK's testpmd, the forwarder `tandem bench io` measures Tandem against, from Debian's
# dpdk-dev package (DPDK 22.11, the DPDK Tandem links), with the shared libraries and drivers it
# loads, as .deb files unpacked without installing (no root, no udev, no hugepage set-up):
#   scripts/fetch-testpmd.sh [DEST]    (default .deps/testpmd)
# DEST/debs holds the packages (about 4 MB: what a machine without network takes along) and
# DEST/testpmd runs testpmd, unpacking them into DEST/root on first use (dpkg-deb, as on Ubuntu).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.deps/testpmd}
[ -x "$dest/testpmd" ] && [ -n "$(ls "$dest"/debs/dpdk-dev_*.deb 2>/dev/null)" ] && exit 0
mkdir -p "$dest/debs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download dpdk-dev >/dev/null 2>&1) || {
  echo "fetch-testpmd: cannot download dpdk-dev (no package index? run apt-get update); bench io runs without testpmd" >&2
  exit 0
}
dpkg -x "$tmp"/dpdk-dev_*.deb "$tmp/dev"
# The packages of the libraries testpmd is linked with (librte_net_i40e.so.23 -> librte-net-i40e23),
# the drivers bench io loads as plugins, and the few non-DPDK libraries Debian 12 has and Ubuntu
# 24.04 may lack.
pkgs="librte-net-memif23 librte-net-af-packet23 librte-mempool-ring23 libfdt1 libjansson4 libibverbs1 ibverbs-providers
  libnl-3-200 libnl-route-3-200 libpcap0.8 libdbus-1-3 libelf1 libbsd0 libmd0"
for l in $(objdump -p "$tmp/dev/usr/bin/dpdk-testpmd" | awk '/NEEDED/ && $2 ~ /^librte_/ {print $2}'); do
  n=${l#lib}; n=${n%.so.23}; n=lib${n//_/-}
  case $n in *mlx5) n=$n-23 ;; *) n=${n}23 ;; esac
  pkgs="$pkgs $n"
done
(cd "$tmp" && apt-get download $pkgs >/dev/null 2>&1)
cp "$tmp"/*.deb "$dest/debs/"
cat > "$dest/testpmd" <<'SH'
#!/bin/sh
# testpmd from the .deb files beside this script, with the drivers bench io uses (memif, af_packet).
d=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$d/root/usr/bin/dpdk-testpmd" ]; then
  for f in "$d"/debs/*.deb; do dpkg-deb -x "$f" "$d/root"; done
  # The EAL refuses drivers from folders others may write to.
  chmod -R go-w "$d/root"
fi
lib=$d/root/usr/lib/x86_64-linux-gnu
pmds=$lib/dpdk/pmds-23.0
exec env LD_LIBRARY_PATH="$lib:$pmds:$d/root/lib/x86_64-linux-gnu" "$d/root/usr/bin/dpdk-testpmd" -d "$pmds/librte_mempool_ring.so.23" \
  -d "$pmds/librte_net_memif.so.23" -d "$pmds/librte_net_af_packet.so.23" "$@"
SH
chmod 755 "$dest/testpmd"
echo "fetch-testpmd: testpmd $(dpkg-deb -f "$tmp"/dpdk-dev_*.deb Version) in $dest ($(du -sh "$dest/debs" | cut -f1) of packages)"
