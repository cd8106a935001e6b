#!/bin/sh
# The postgresql add-on's entrypoint (PostgreSQL 17). Pier runs it as:
#   pier-addon serve        the server: one database PIER_ADDON_DB owned by the user PIER_ADDON_USER
#                           (password PIER_ADDON_PASSWORD), created at first start; port 5432
#   pier-addon ready        exits 0 once the database exists and the server accepts connections
#   pier-addon backup       pg_dump (custom format) of the database to stdout
#   pier-addon restore F    reads the dump F and restores it into a new database, in one transaction;
#                           only when that succeeded does it replace the add-on's database (renamed in turn)
# Data: /data (the add-on's volume). Local connections (these commands) use peer authentication as the
# postgres user; network connections need the password (scram-sha-256).
set -eu
export PGDATA=/data/pg PGHOST=/tmp
db=${PIER_ADDON_DB:?} user=${PIER_ADDON_USER:?}

psql_() { psql -v ON_ERROR_STOP=1 -X -q -d postgres "$@"; }

case "${1:-serve}" in
  serve)
    if [ ! -s "$PGDATA/PG_VERSION" ]; then
      initdb -D "$PGDATA" -U postgres --auth-local=peer --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
      cat >>"$PGDATA/pg_hba.conf" <<HBA
host all all 0.0.0.0/0 scram-sha-256
host all all ::/0 scram-sha-256
HBA
      pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start >/dev/null
      psql_ -v u="$user" -v d="$db" -v p="$PIER_ADDON_PASSWORD" <<'SQL'
CREATE ROLE :"u" LOGIN PASSWORD :'p';
CREATE DATABASE :"d" OWNER :"u";
SQL
      pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    mem=${PIER_ADDON_MEMORY_MB:-512}
    exec postgres -D "$PGDATA" -c listen_addresses='*' -c port=5432 \
      -c shared_buffers="$((mem / 4))MB" -c effective_cache_size="$((mem / 2))MB" \
      -c max_connections=100 -c unix_socket_directories=/tmp
    ;;
  ready)
    # The final server only: the first start's set-up server listens on no TCP port.
    pg_isready -q -h 127.0.0.1 -p 5432 -d "$db"
    ;;
  backup)
    exec pg_dump -h /tmp -Fc -d "$db"
    ;;
  restore)
    tmp="${db}_restore"
    f=${2:?usage: pier-addon restore FILE}
    psql_ -c "DROP DATABASE IF EXISTS \"$tmp\"" >/dev/null
    psql_ -c "CREATE DATABASE \"$tmp\" OWNER \"$user\"" >/dev/null
    if ! pg_restore --exit-on-error --single-transaction --no-owner --role="$user" -d "$tmp" "$f"; then
      psql_ -c "DROP DATABASE IF EXISTS \"$tmp\"" >/dev/null || true
      echo "the restore failed: the database is as it was" >&2
      exit 1
    fi
    # The swap: no new connections to the database, the open ones closed, then the names change. The
    # database before the restore stays as <db>_before_restore until the next restore.
    old="${db}_before_restore"
    psql_ -c "DROP DATABASE IF EXISTS \"$old\" WITH (FORCE)" >/dev/null
    psql_ -c "ALTER DATABASE \"$db\" WITH ALLOW_CONNECTIONS false" \
      -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid()" >/dev/null
    i=0
    while [ "$(psql_ -tA -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db'")" != 0 ] && [ $i -lt 100 ]; do
      i=$((i + 1)); sleep 0.1
    done
    if ! psql_ -c "ALTER DATABASE \"$db\" RENAME TO \"$old\"" >/dev/null; then
      psql_ -c "ALTER DATABASE \"$db\" WITH ALLOW_CONNECTIONS true" >/dev/null || true
      psql_ -c "DROP DATABASE IF EXISTS \"$tmp\"" >/dev/null || true
      echo "the restored database could not replace the current one: the database is as it was" >&2
      exit 1
    fi
    psql_ -c "ALTER DATABASE \"$tmp\" RENAME TO \"$db\"" >/dev/null
    ;;
  *) echo "pier-addon: unknown command '$1'" >&2; exit 2 ;;
esac
