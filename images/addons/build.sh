#!/usr/bin/env bash
# Builds an add-on image from Debian trixie packages (docs/adr/0015-addons.md):
#   build.sh kv          -> pier/addon-kv:8      (valkey-server 8.1 and valkey-tools)
#   build.sh postgresql  -> pier/addon-postgresql:17 (postgresql-17)
#   build.sh mysql       -> pier/addon-mysql:11  (mariadb-server 11.8 and its client tools)
#   build.sh fs          -> pier/addon-fs:1      (a file-system bucket: minbase's tar, gzip and find)
# Each image holds the server and its entrypoint (images/addons/<kind>-entrypoint.sh) and nothing else;
# it runs as the server's own user. PIER_ADDON_GENERATION (set by scripts/setup.sh, or by Pier when it
# builds an image on first use) is recorded as a label: a newer one rebuilds the image. About 40 s each.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
check_ca
kind=${1:?usage: build.sh kv|postgresql|mysql|fs}
generation=${PIER_ADDON_GENERATION:?}
case "$kind" in
  kv) tag=pier/addon-kv:8 packages=valkey-server,valkey-tools user=valkey mode=700 ;;
  postgresql) tag=pier/addon-postgresql:17 packages=postgresql-17,postgresql-client-17 user=postgres mode=700 ;;
  mysql) tag=pier/addon-mysql:11 packages=mariadb-server,mariadb-client user=mysql mode=700 ;;
  # fs runs as the apps' own uid (ADR 0023): what they write is its own, and its /data (copied to a new
  # volume with its owner) is theirs to write.
  fs) tag=pier/addon-fs:1 packages=tar,gzip,findutils user=10000:10000 mode=755 ;;
  *) echo "build.sh: unknown add-on kind '$kind' (kv, postgresql, mysql or fs)" >&2; exit 2 ;;
esac

mirror=$(debian_mirror 'bookworm|trixie')

here=$(cd "$(dirname "$0")" && pwd)
work_dir
echo "setup: mmdebstrap trixie ($packages) from $mirror" >&2
# The servers' packages start nothing at install time in a chroot (no init); the data folder /data is
# the add-on's volume, owned by the server's user so that a new named volume is created with that owner.
mmdebstrap --quiet --variant=minbase --include="ca-certificates,$packages" \
  --customize-hook="'$here/../base/install-ca.sh' \"\$1\" '$work/extra-ca.crt'" \
  --customize-hook="cp '$here/$kind-entrypoint.sh' \"\$1/usr/local/bin/pier-addon\" && chmod 755 \"\$1/usr/local/bin/pier-addon\"" \
  --customize-hook="mkdir -p \"\$1/data\" \"\$1/backup\" && chroot \"\$1\" chown ${user%%:*}:${user#*:} /data /backup && chmod $mode \"\$1/data\"" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  --customize-hook='rm -rf "$1"/var/lib/mysql/*' \
  trixie "$work/rootfs.tar" "$mirror"
"$docker" import \
  --change "LABEL pier.managed=true pier.addon.generation=$generation pier.addon.kind=$kind" \
  --change 'ENV PATH=/usr/lib/postgresql/17/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  --change "USER $user" \
  --change 'ENTRYPOINT ["/usr/local/bin/pier-addon"]' \
  --change 'CMD ["serve"]' \
  "$work/rootfs.tar" "$tag" >/dev/null
echo "setup: built $tag" >&2
