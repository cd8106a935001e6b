#!/usr/bin/env bash
# Builds pier/guard:1, the node guard's image (docs/adr/0019, "On a swarm: the node guard"): Debian
# trixie minbase with nftables, nothing else (no CA: it makes no TLS connection). Pier's global service pier-guard-<scope> runs its `sh` loop on
# every swarm node (host network, NET_ADMIN). PIER_GUARD_GENERATION (set by scripts/setup.sh) is recorded
# as a label: a newer one rebuilds the image. About 30 s.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
generation=${PIER_GUARD_GENERATION:?}
tag=pier/guard:1
mirror=$(debian_mirror 'bookworm|trixie')
work_dir
echo "setup: mmdebstrap trixie (nftables) from $mirror" >&2
mmdebstrap --quiet --variant=minbase --include=nftables \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  trixie "$work/rootfs.tar" "$mirror"
"$docker" import \
  --change "LABEL pier.managed=true pier.guard.generation=$generation" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  "$work/rootfs.tar" "$tag" >/dev/null
echo "setup: built $tag" >&2
