#!/usr/bin/env bash
# Fetches intel-ipsec-mb, the multi-buffer crypto library of the ipsec app's batched CPU path
# (apps/ipsec/esp_ipsecmb.h): its shared object and its one header, unpacked from Debian packages
# without installing anything (`apt-get download` + `dpkg -x`), so the GPU machine (no network)
# gets them carried in .deps.
#   scripts/fetch-ipsec-mb.sh [DEST]    (default .deps/ipsec-mb; DEST/include, DEST/lib, DEST/VERSION)
#
# Version 2.0 comes from Debian trixie through a throwaway apt configuration in a temporary
# directory (the system's sources are not touched): releases before 1.4 (bookworm has 1.3) store
# to a process-wide error variable on every job submitted, which caps many threads at about
# 12 Mpps (upstream issue 112). When trixie cannot be reached, the packages of the system's own
# sources are taken instead (bookworm 1.3, Ubuntu 24.04 1.5), with a message. Only the .so is kept
# (13 MB; the .a is 21 MB), under its SONAME, with no symlinks. Quiet when DEST is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.deps/ipsec-mb}
if [ -f "$dest/include/intel-ipsec-mb.h" ] && compgen -G "$dest/lib/libIPSec_MB.so.*" >/dev/null; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Downloads the runtime and -dev packages into $tmp/debs with extra apt options; false on failure.
download() {
  rm -rf "$tmp/debs" && mkdir -p "$tmp/debs"
  local runtime
  runtime=$(apt-cache "$@" show --no-all-versions libipsec-mb-dev 2>/dev/null |
            sed -n 's/^Depends:.*\(libipsec-mb[0-9][0-9]*\).*/\1/p' | head -n1)
  [ -n "$runtime" ] || return 1
  (cd "$tmp/debs" && apt-get "$@" -qq download "$runtime" libipsec-mb-dev >/dev/null 2>&1)
}

apt_opts=(-o Acquire::Retries=1 -o Acquire::http::Timeout=20)
[ "$(id -u)" -eq 0 ] && apt_opts+=(-o APT::Sandbox::User=root)  # _apt cannot write to $tmp
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
source=""
if [ -f "$keyring" ]; then
  mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial" "$tmp/apt/parts" "$tmp/apt/prefs"
  echo "deb [signed-by=$keyring] http://deb.debian.org/debian trixie main" > "$tmp/apt/sources.list"
  trixie=("${apt_opts[@]}" -o Dir::Etc::SourceList="$tmp/apt/sources.list" -o Dir::Etc::SourceParts="$tmp/apt/parts"
          -o Dir::Etc::PreferencesParts="$tmp/apt/prefs" -o Dir::State::Lists="$tmp/apt/lists"
          -o Dir::Cache="$tmp/apt/cache" -o Acquire::Languages=none -o APT::Architectures=amd64
          -o Debug::NoLocking=1)
  if apt-get "${trixie[@]}" -qq update >/dev/null 2>&1 && download "${trixie[@]}"; then
    source="Debian trixie"
  fi
fi
if [ -z "$source" ]; then
  echo "fetch-ipsec-mb: Debian trixie not reachable (network, or no Debian keyring); taking the" \
       "system's libipsec-mb (before 1.4, multi-thread scaling is capped: upstream issue 112)" >&2
  if ! download "${apt_opts[@]}"; then
    echo "fetch-ipsec-mb: cannot download libipsec-mb-dev (no package index? run apt-get update);" \
         "the ipsec app's batched path uses OpenSSL" >&2
    exit 0
  fi
  source="the system's sources"
fi

for d in "$tmp"/debs/*.deb; do dpkg -x "$d" "$tmp/root"; done
rm -rf "$dest" && mkdir -p "$dest/include" "$dest/lib"
cp "$tmp/root/usr/include/intel-ipsec-mb.h" "$dest/include/"
for so in "$tmp"/root/usr/lib/*/libIPSec_MB.so.*; do  # the one named by its SONAME
  if [[ $(basename "$so") =~ ^libIPSec_MB\.so\.[0-9]+$ ]]; then cp -L "$so" "$dest/lib/"; fi
done
copyright=$(ls "$tmp"/root/usr/share/doc/libipsec-mb*/copyright 2>/dev/null | head -n1)
[ -n "$copyright" ] && cp "$copyright" "$dest/copyright"  # BSD-3-Clause: the notice goes with the binary
dpkg-deb -f "$(ls "$tmp"/debs/libipsec-mb-dev_*.deb)" Version > "$dest/VERSION"
echo "fetch-ipsec-mb: intel-ipsec-mb $(cat "$dest/VERSION") from $source in $dest ($(du -sh "$dest" | cut -f1))"
