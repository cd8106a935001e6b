#!/bin/bash
# The mysql add-on's entrypoint (MariaDB 11.8 from Debian trixie, port 3306). Pier runs it as:
#   pier-addon serve        the server: one database PIER_ADDON_DB and one user PIER_ADDON_USER (password
#                           PIER_ADDON_PASSWORD) with every privilege on that database and none elsewhere,
#                           made at the first start; memory settings from PIER_ADDON_MEMORY_MB
#   pier-addon ready        exits 0 once the final server answers (the database exists from then on,
#                           unless its user drops it: a restore makes it again)
#   pier-addon backup       a consistent dump of the database (mariadb-dump --single-transaction, with
#                           routines, triggers and events), gzip-compressed, to stdout
#   pier-addon restore F    checks the dump F, loads it whole into a new database, and only when that
#                           succeeded swaps its tables in (one RENAME TABLE) for the database's own
# Data: /data/mysql (the add-on's volume). The server runs as the mysql user; `root` and `mysql` are
# accounts of the local socket only (unix_socket authentication: these commands), the add-on's user is the
# only account reachable over the network.
set -euo pipefail
db=${PIER_ADDON_DB:?} user=${PIER_ADDON_USER:?}
datadir=/data/mysql
sock=/tmp/mysqld.sock
conf=/tmp/my.cnf

# The server's settings. The flavor's memory (the container's limit) holds the InnoDB buffer pool (half of
# it less 64 MB: InnoDB reads with O_DIRECT, so the pool is the database's cache, not the kernel's), the
# redo log's buffer, per-connection buffers and in-memory temporary tables.
write_conf() {
  local mem pool
  mem=${PIER_ADDON_MEMORY_MB:-512}
  pool=$((mem / 2 - 64))
  [ "$pool" -ge 32 ] || pool=32
  umask 077
  cat >"$conf" <<CONF
[mariadbd]
datadir = $datadir
socket = $sock
pid-file = /tmp/mysqld.pid
tmpdir = /tmp
port = 3306
bind-address = *
skip-name-resolve
character-set-server = utf8mb4
innodb_buffer_pool_size = ${pool}M
innodb_log_file_size = $((pool / 4 > 32 ? pool / 4 : 32))M
max_connections = 100
tmp_table_size = $((mem / 16 < 64 ? mem / 16 : 64))M
max_heap_table_size = $((mem / 16 < 64 ? mem / 16 : 64))M
key_buffer_size = 8M
max_allowed_packet = 64M
performance_schema = OFF
CONF
}

# SQL as the local administrator (the mysql account over the socket), stopping at the first error.
sql() { mariadb --no-defaults --socket="${SOCKET:-$sock}" --user=mysql --batch --skip-column-names "$@"; }
# A string as an SQL literal's content; an identifier quoted (backquotes doubled).
lit() { local s=${1//\\/\\\\}; printf '%s' "${s//\'/\\\'}"; }
qi() { printf '`%s`' "${1//\`/\`\`}"; }
fail() { echo "$*" >&2; exit 1; }

# The first start: a data folder made aside (/data/mysql-init), the database and the user created on a
# server that listens on no TCP port, then renamed to /data/mysql: a start cut short begins again.
init() {
  rm -rf /data/mysql-init
  mariadb-install-db --no-defaults --datadir=/data/mysql-init --user=mysql --auth-root-authentication-method=socket \
    --auth-root-socket-user=mysql --skip-test-db >/tmp/install.log 2>&1 || { cat /tmp/install.log >&2; exit 1; }
  mariadbd --defaults-file="$conf" --datadir=/data/mysql-init --skip-networking --socket=/tmp/init.sock \
    --pid-file=/tmp/init.pid &
  local pid=$! i=0
  until SOCKET=/tmp/init.sock sql -e 'SELECT 1' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 600 ] || fail "the set-up server did not start"
    kill -0 $pid 2>/dev/null || fail "the set-up server exited"
    sleep 0.1
  done
  # The user's privileges name its database with `_` escaped (in a GRANT, `_` matches any character).
  SOCKET=/tmp/init.sock sql <<SQL
CREATE DATABASE $(qi "$db") CHARACTER SET utf8mb4;
CREATE USER '$(lit "$user")'@'%' IDENTIFIED BY '$(lit "$PIER_ADDON_PASSWORD")';
GRANT ALL PRIVILEGES ON $(qi "${db//_/\\_}").* TO '$(lit "$user")'@'%';
DELETE FROM mysql.proxies_priv WHERE Host <> 'localhost';
FLUSH PRIVILEGES;
SQL
  mariadb-admin --no-defaults --socket=/tmp/init.sock --user=mysql shutdown
  wait $pid || true
  mv /data/mysql-init "$datadir"
}

# The names of SCHEMA's objects of one kind (tables: base tables only), one a line.
names() {
  local s; s=$(lit "$1")
  case $2 in
    tables) sql -e "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$s' AND TABLE_TYPE = 'BASE TABLE'" ;;
    views) sql -e "SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = '$s'" ;;
    triggers) sql -e "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '$s'" ;;
    routines) sql -e "SELECT CONCAT(ROUTINE_TYPE, ' ', ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '$s'" ;;
    events) sql -e "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = '$s'" ;;
  esac
}

dump_() { mariadb-dump --no-defaults --socket="$sock" --user=mysql --skip-lock-tables --default-character-set=utf8mb4 "$@"; }

# Writes to FILE the SQL that makes SCHEMA's triggers, views, routines and events again, then drops them
# from SCHEMA: what is left are base tables, which RENAME TABLE moves between databases (a table with
# triggers cannot change database; views, routines and events belong to their database).
detach() {
  local s=$1 f=$2 n
  local -a views
  : >"$f"
  mapfile -t views < <(names "$s" views)
  if [ -n "$(names "$s" triggers)$(names "$s" routines)$(names "$s" events)" ]; then
    dump_ --no-data --no-create-info --triggers --routines --events "$s" >>"$f"
  fi
  [ ${#views[@]} -eq 0 ] || dump_ --no-data --skip-triggers "$s" "${views[@]}" >>"$f"
  local drops=""
  while IFS= read -r n; do drops+="DROP TRIGGER $(qi "$s").$(qi "$n");"; done < <(names "$s" triggers)
  for n in "${views[@]}"; do drops+="DROP VIEW IF EXISTS $(qi "$s").$(qi "$n");"; done
  while IFS= read -r n; do drops+="DROP ${n%% *} $(qi "$s").$(qi "${n#* }");"; done < <(names "$s" routines)
  while IFS= read -r n; do drops+="DROP EVENT $(qi "$s").$(qi "$n");"; done < <(names "$s" events)
  [ -z "$drops" ] || sql -e "$drops"
}

attach() { [ ! -s "$1" ] || sql --binary-mode "$2" <"$1"; }

# One RENAME TABLE (atomic: a client sees the tables before or after it, never a mix): the base tables of
# A go to B and those of C to D. An app's open transaction on a table would hold it: after 5 s, the
# user's connections are closed and it tries again.
move_tables() {
  local -a parts=()
  local t i
  while IFS= read -r t; do parts+=("$(qi "$1").$(qi "$t") TO $(qi "$2").$(qi "$t")"); done < <(names "$1" tables)
  while IFS= read -r t; do parts+=("$(qi "$3").$(qi "$t") TO $(qi "$4").$(qi "$t")"); done < <(names "$3" tables)
  [ ${#parts[@]} -gt 0 ] || return 0
  local stmt
  stmt="RENAME TABLE $(IFS=,; echo "${parts[*]}")"
  for i in 1 2 3; do
    sql -e "SET SESSION lock_wait_timeout = 5; $stmt" 2>/tmp/rename.err && return 0
    while IFS= read -r t; do sql -e "KILL CONNECTION $t" 2>/dev/null || true; done \
      < <(sql -e "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '$(lit "$user")'")
  done
  cat /tmp/rename.err >&2
  return 1
}

# All or nothing: the dump is checked (gzip, its last line), loaded whole into <db>_restore, and only then
# swapped in. The database before the restore stays as <db>_before_restore until the next restore.
restore() {
  local f=$1 new="${db}_restore" old="${db}_before_restore" charset
  gzip -t "$f" 2>/dev/null || fail "the backup is not a gzip-compressed dump: the database is as it was"
  case "$(gzip -dc "$f" | tail -n 1)" in
    "-- Dump completed"*) ;;
    *) fail "the dump is incomplete (its last line is not mariadb-dump's 'Dump completed'): the database is as it was" ;;
  esac
  sql -e "CREATE DATABASE IF NOT EXISTS $(qi "$db") CHARACTER SET utf8mb4"
  charset=$(sql -e "SELECT CONCAT('CHARACTER SET ', DEFAULT_CHARACTER_SET_NAME, ' COLLATE ', DEFAULT_COLLATION_NAME) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '$(lit "$db")'")
  sql -e "DROP DATABASE IF EXISTS $(qi "$new"); CREATE DATABASE $(qi "$new") $charset"
  if ! gzip -dc "$f" | sql --binary-mode "$new" 2>/tmp/load.err; then
    sql -e "DROP DATABASE IF EXISTS $(qi "$new")" || true
    fail "the dump could not be loaded: the database is as it was: $(tail -n 2 /tmp/load.err)"
  fi
  sql -e "DROP DATABASE IF EXISTS $(qi "$old"); CREATE DATABASE $(qi "$old") $charset"
  detach "$new" /tmp/restored-objects.sql
  detach "$db" /tmp/previous-objects.sql
  if ! move_tables "$db" "$old" "$new" "$db"; then
    attach /tmp/previous-objects.sql "$db"
    sql -e "DROP DATABASE IF EXISTS $(qi "$new")" || true
    fail "the restored tables could not replace the database's: the database is as it was"
  fi
  if ! attach /tmp/restored-objects.sql "$db" 2>/tmp/attach.err; then
    # Back as it was: the tables swapped back, the previous objects made again.
    move_tables "$db" "$new" "$old" "$db" && attach /tmp/previous-objects.sql "$db"
    fail "the restored triggers, views or routines could not be made: the database is as it was: $(tail -n 2 /tmp/attach.err)"
  fi
  attach /tmp/previous-objects.sql "$old" || true
  sql -e "DROP DATABASE IF EXISTS $(qi "$new")"
}

case "${1:-serve}" in
  serve)
    write_conf
    [ -d "$datadir" ] || init
    exec mariadbd --defaults-file="$conf"
    ;;
  ready)
    # The final server only: the first start's set-up server has a socket of its own.
    sql -e 'SELECT 1' >/dev/null 2>&1
    ;;
  backup)
    # --single-transaction: one consistent snapshot of InnoDB tables without locking the app out. The
    # dump ends with a "-- Dump completed" line: a restore refuses a dump cut short.
    mariadb-dump --no-defaults --socket="$sock" --user=mysql --single-transaction --routines --triggers \
      --events --hex-blob --default-character-set=utf8mb4 "$db" | gzip -c
    ;;
  restore)
    restore "${2:?usage: pier-addon restore FILE}"
    ;;
  *) echo "pier-addon: unknown command '$1'" >&2; exit 2 ;;
esac
