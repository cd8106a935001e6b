#!/bin/sh
# The kv add-on's entrypoint (valkey 8.1, Redis protocol, port 6378). Pier runs it as:
#   pier-addon serve             the server (PIER_ADDON_PASSWORD: the add-on token; PIER_ADDON_MEMORY_MB)
#   pier-addon backup            a consistent snapshot (RDB) of the data to stdout
#   pier-addon ready             exits 0 when the server answers PING with the password
#   pier-addon restore-stage F   checks the snapshot F (an RDB file), keeps it as /data/restore.rdb;
#                                the next `serve` (Pier restarts the container) loads it
# Data: /data (the add-on's volume), append-only file fsynced every second, and an RDB on shutdown.
set -eu
export REDISCLI_AUTH="${PIER_ADDON_PASSWORD:?}"
conf=/tmp/valkey.conf

# write_conf APPENDONLY [PORT]: PORT 0 listens on a unix socket only (the set-up phase of a restore, which
# nothing outside the container may see, so that `ready` stays false until the final server runs).
write_conf() {
  umask 077
  mem=${PIER_ADDON_MEMORY_MB:-512}
  cat >"$conf" <<CONF
port ${2:-6378}
unixsocket /tmp/valkey.sock
bind * -::*
protected-mode no
requirepass $PIER_ADDON_PASSWORD
dir /data
appendonly $1
appendfsync everysec
appenddirname appendonlydir
save 3600 1 300 100 60 10000
maxmemory $((mem * 3 / 4))mb
maxmemory-policy noeviction
CONF
}

cli() { valkey-cli -p 6378 "$@"; }
local_cli() { valkey-cli -s /tmp/valkey.sock "$@"; }

case "${1:-serve}" in
  serve)
    if [ -f /data/restore.rdb ]; then
      # A staged restore: the snapshot replaces the data. The data before it stays in /data/before-restore
      # until the next restore. The server loads the snapshot without the append-only file, then rewrites
      # that file from it, then stops: the normal start below loads exactly the snapshot.
      rm -rf /data/before-restore && mkdir /data/before-restore
      for f in appendonlydir dump.rdb; do [ -e "/data/$f" ] && mv "/data/$f" /data/before-restore/; done
      mv /data/restore.rdb /data/dump.rdb
      write_conf no 0
      valkey-server "$conf" &
      pid=$!
      i=0; until local_cli ping >/dev/null 2>&1; do i=$((i + 1)); [ $i -lt 600 ] || exit 1; sleep 0.1; done
      local_cli config set appendonly yes >/dev/null
      i=0
      until local_cli info persistence | grep -q '^aof_rewrite_in_progress:0' && local_cli info persistence | grep -q '^aof_rewrite_scheduled:0' && local_cli info persistence | grep -q '^aof_enabled:1'; do
        i=$((i + 1)); [ $i -lt 3000 ] || exit 1; sleep 0.1
      done
      local_cli shutdown save >/dev/null 2>&1 || true
      wait $pid || true
    fi
    write_conf yes
    exec valkey-server "$conf"
    ;;
  ready)
    cli ping 2>/dev/null | grep -q PONG
    ;;
  backup)
    f=$(mktemp /tmp/backup.XXXXXX)
    cli --rdb "$f" >/dev/null 2>&1 || { echo "valkey-cli --rdb failed" >&2; rm -f "$f"; exit 1; }
    cat "$f"
    rm -f "$f"
    ;;
  restore-stage)
    f=/data/restore.rdb.part
    cp "${2:?usage: pier-addon restore-stage FILE}" "$f"
    if ! valkey-check-rdb "$f" >/tmp/check.log 2>&1; then
      rm -f "$f"
      echo "the snapshot is not a valid RDB file:" >&2
      tail -n 3 /tmp/check.log >&2
      exit 1
    fi
    mv "$f" /data/restore.rdb
    ;;
  *) echo "pier-addon: unknown command '$1'" >&2; exit 2 ;;
esac
