#!/usr/bin/env bash
# Builds pier/guard:1, the image of Pier's work on the swarm nodes themselves (docs/adr/0019, "On a swarm:
# the node guard"; docs/adr/0030, "The nodes' sweep"): nft and socat with the libraries they load, taken
# from a Debian trixie minbase, and busybox (static) for `sh`, `sleep` and `printf`; nothing else (no
# package manager, no CA: it makes no TLS connection). Pier's global service pier-guard-<scope> runs its
# `sh` loop on every swarm node (host network, NET_ADMIN); the sweep, a global job, asks each node's
# dockerd (its socket mounted) through socat to prune the images of releases no container uses. Pulled
# once per node. PIER_GUARD_GENERATION (set by scripts/setup.sh) is recorded as a label: a newer one
# rebuilds the image. PIER_GUARD_TAG builds it under another tag (a trial beside the one in use). ~30 s.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
generation=${PIER_GUARD_GENERATION:?}
tag=${PIER_GUARD_TAG:-pier/guard:1}
mirror=$(debian_mirror 'bookworm|trixie')
work_dir
echo "setup: mmdebstrap trixie (nftables, socat, busybox-static) from $mirror" >&2
# The libraries nft and socat load, as the dynamic loader of the rootfs itself resolves them (its own paths).
mmdebstrap --quiet --variant=minbase --include=nftables,socat,busybox-static \
  --customize-hook='chroot "$1" ldd /usr/sbin/nft /usr/bin/socat > "$1/nft.libs"' \
  trixie "$work/rootfs" "$mirror"
slim="$work/slim"
mkdir -p "$slim/bin" "$slim/usr/sbin" "$slim/tmp"
chmod 1777 "$slim/tmp"
mkdir -p "$slim/usr/bin"
cp "$work/rootfs/usr/sbin/nft" "$slim/usr/sbin/nft"
cp "$work/rootfs/usr/bin/socat" "$slim/usr/bin/socat"
cp "$work/rootfs/bin/busybox" "$slim/bin/busybox"
for applet in sh sleep cat printf; do ln -s busybox "$slim/bin/$applet"; done
# `libfoo.so.1 => /usr/lib/.../libfoo.so.1 (0x...)` and the loader's `/lib64/ld-linux-x86-64.so.2 (0x...)`;
# not the `/usr/bin/socat:` line that heads each binary's list.
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\// && $i !~ /:$/) print $i }' "$work/rootfs/nft.libs" | sort -u |
  while read -r lib; do
    mkdir -p "$slim$(dirname "$lib")"
    cp -L "$work/rootfs$lib" "$slim$lib"
  done
# /lib64 and /lib are symlinks into /usr on trixie (merged /usr): the loader's path must resolve.
for link in lib lib64; do
  if [ -L "$work/rootfs/$link" ] && [ ! -e "$slim/$link" ]; then cp -P "$work/rootfs/$link" "$slim/$link"; fi
done
chroot "$slim" /usr/sbin/nft --version >/dev/null || { echo "setup: the guard's nft does not run" >&2; exit 1; }
chroot "$slim" /usr/bin/socat -V >/dev/null || { echo "setup: the guard's socat does not run" >&2; exit 1; }
tar -C "$slim" -cf "$work/rootfs.tar" .
"$docker" import \
  --change "LABEL pier.managed=true pier.guard.generation=$generation" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  "$work/rootfs.tar" "$tag" >/dev/null
echo "setup: built $tag ($(du -sh "$slim" | cut -f1))" >&2
