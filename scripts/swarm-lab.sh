#!/usr/bin/env bash
# A Docker Swarm of several nodes on this one machine, for Pier's swarm tests (issue 18, ADR 0030).
#
#   npm run swarm-lab -- up N [--json]    N dockerd's, one swarm (node1 manager), the lab registry
#   npm run swarm-lab -- kill NODE        SIGKILL a node's dockerd: its containerd, shims and tasks die too
#   npm run swarm-lab -- start NODE       start a killed node again (it rejoins the swarm by itself)
#   npm run swarm-lab -- status [--json]  what runs
#   npm run swarm-lab -- down             remove all of it, and check that nothing is left (the nodes'
#                                         dockerd logs are kept in $TMPDIR/pier-swarm-lab-logs/NAME/)
#   npm run swarm-lab -- lock | unlock    the lab's lock alone (up takes it, down releases it)
#
# The recipe (and its pitfalls) is SWARM-LAB.md in the shared notes, summarised in ADR 0030. The machine's
# own dockerd, its iptables and its networks are never touched: every lab node is a dockerd in a network
# namespace of its own (its own data root, exec root, managed containerd, key, hostname and PID
# namespace), each with a veth into a "hub" namespace that holds the bridge and the registry; the host
# has one veth into the hub. Every wait is bounded. Run as root.
#
# Settings (environment): PIER_SWARM_LAB_NAME (default pierlab: the prefix of its namespaces, host veth and
# cgroups; two labs with different names and networks run side by side), PIER_SWARM_LAB_DIR (default
# /var/lib/pier-swarm-lab, or /var/lib/pier-swarm-lab-NAME for another name; on a file system where overlay2
# works), PIER_SWARM_LAB_NET (the /24's first three octets, default 192.168.250 for the default name).
#
# One owner per lab: `up` takes the lab's lock (a file under /run/pier-swarm-lab, or
# PIER_SWARM_LAB_LOCK_DIR, holding the owner's pid and start time) for PIER_SWARM_LAB_OWNER (a pid: the
# swarm e2e files pass their own, test/e2e-swarm/lab.ts, so a file holds its lab for its whole run) or,
# without it, for this script's own process (held while `up` runs). While the owner lives, `up`, `kill`,
# `start` and an owner's `down` of the lab refuse, naming it; a lock whose owner is gone is taken over with
# a notice. `down` without PIER_SWARM_LAB_OWNER (by hand) takes the lab from a live owner, saying so, and
# releases the lock last, once nothing is left.
set -euo pipefail

PFX=${PIER_SWARM_LAB_NAME:-pierlab}
if ! [[ $PFX =~ ^[a-z][a-z0-9]{1,9}$ ]]; then
  echo "swarm-lab: PIER_SWARM_LAB_NAME '$PFX' must be 2 to 10 lower-case letters and digits, starting with a letter" >&2
  exit 1
fi
if [ "$PFX" = pierlab ]; then
  LAB=${PIER_SWARM_LAB_DIR:-/var/lib/pier-swarm-lab}
  NET=${PIER_SWARM_LAB_NET:-192.168.250}
else
  LAB=${PIER_SWARM_LAB_DIR:-/var/lib/pier-swarm-lab-$PFX}
  NET=${PIER_SWARM_LAB_NET:?swarm-lab: a lab named $PFX needs PIER_SWARM_LAB_NET (e.g. 192.168.251)}
fi
HUB=$PFX-hub
HOST_IF=${PFX}0
HOST_ADDR=$NET.1
HUB_ADDR=$NET.2
REGISTRY=$HUB_ADDR:5000
REGISTRY_USER=pier
DOCKER=/usr/bin/docker
[ -x "$DOCKER" ] || DOCKER=docker
SELF=$(readlink -f "$0")

say() { echo "swarm-lab: $*" >&2; }
die() {
  say "$*"
  exit 1
}

# ---------------------------------------------------------------------------------------------- lock
LOCK_DIR=${PIER_SWARM_LAB_LOCK_DIR:-/run/pier-swarm-lab}
LOCK=$LOCK_DIR/$PFX.lock
OWNER=${PIER_SWARM_LAB_OWNER:-$$}
[[ $OWNER =~ ^[1-9][0-9]*$ ]] || die "PIER_SWARM_LAB_OWNER '$OWNER' is not a process id"

# A process's start time (clock ticks since boot; empty when it is gone): with its pid, it names one
# process (a pid is reused).
proc_start() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
proc_cmd() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | sed 's/ $//'; }
# The lock's recorded pid, whether its owner lives or not (empty without a lock).
lock_pid() { [ -s "$LOCK" ] && cut -d' ' -f1 "$LOCK" || true; }
# The lock's owner when it still lives (empty otherwise).
lock_holder() {
  local pid start
  [ -s "$LOCK" ] || return 0
  read -r pid start <"$LOCK" || true
  [ -n "$pid" ] && [ -n "$start" ] && [ "$(proc_start "$pid")" = "$start" ] && echo "$pid"
  return 0
}
# Serialises the lock's readers and writers (every lab's: what they do takes milliseconds).
lock_guard() {
  mkdir -p "$LOCK_DIR"
  exec 9<"$LOCK_DIR"
  flock -w 10 9 || die "the lock directory $LOCK_DIR stays locked (flock)"
}
refuse_held() {
  die "the lab $PFX is in use by pid $1 ($(proc_cmd "$1")); free it with" \
    "\`PIER_SWARM_LAB_NAME=$PFX PIER_SWARM_LAB_NET=$NET npm run swarm-lab -- down\` or \`kill $1\`"
}
# Takes the lock for OWNER (again, when it holds it); refuses when another live process holds it.
lock_take() {
  local holder old
  lock_guard
  holder=$(lock_holder)
  [ -z "$holder" ] || [ "$holder" = "$OWNER" ] || refuse_held "$holder"
  old=$(lock_pid)
  [ -z "$holder" ] && [ -n "$old" ] && [ "$old" != "$OWNER" ] &&
    say "the lab $PFX's lock was held by pid $old, which is gone: taking it over"
  [ -n "$(proc_start "$OWNER")" ] || die "the lab's owner, pid $OWNER, is not running"
  echo "$OWNER $(proc_start "$OWNER")" >"$LOCK.new"
  mv -f "$LOCK.new" "$LOCK"
  exec 9<&-
}
# Before a change to a lab that may be held: refuses when another live process holds it, unless `by_hand`
# (a `down` without PIER_SWARM_LAB_OWNER), which takes the lab, saying so.
lock_check() {
  local holder
  lock_guard
  holder=$(lock_holder)
  if [ -n "$holder" ] && [ "$holder" != "$OWNER" ]; then
    [ "${1:-}" = by_hand ] || refuse_held "$holder"
    say "taking the lab $PFX from pid $holder ($(proc_cmd "$holder"))"
  fi
  exec 9<&-
}
lock_release() {
  lock_guard
  rm -f "$LOCK"
  exec 9<&-
}
node_ns() { echo "$PFX-$1"; }
node_dir() { echo "$LAB/$1"; }
node_sock() { echo "$LAB/$1/docker.sock"; }
node_addr() { echo "$NET.$((10 + ${1#node}))"; }
dk() {
  local node=$1
  shift
  DOCKER_CONFIG=$LAB/client "$DOCKER" -H "unix://$(node_sock "$node")" "$@"
}
valid_node() { [[ $1 =~ ^node[1-9][0-9]?$ ]] || die "'$1' is not a lab node name (node1, node2, ...)"; }
known_nodes() {
  local d
  for d in "$LAB"/node*/; do [ -d "$d" ] && basename "$d"; done | sort -V
}

# The host PIDs of the processes in a network namespace (by its inode: never by a pid file, which holds
# a PID of the node's own PID namespace).
ns_pids() {
  local ino p
  [ -e "/run/netns/$1" ] || return 0
  ino=$(stat -L -c %i "/run/netns/$1")
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/net" 2>/dev/null)" = "net:[$ino]" ] && echo "${p#/proc/}"
  done
  return 0
}
ns_pid_of() {
  local p
  for p in $(ns_pids "$1"); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && echo "$p" && return 0
  done
  return 0
}
# Wait (at most $2 seconds) until the namespace holds no process; then SIGKILL whatever is left.
ns_drain() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [ -z "$(ns_pids "$1")" ] && return 0
    sleep 0.1
  done
  ns_pids "$1" | xargs -r kill -9 2>/dev/null || true
  sleep 0.5
  [ -z "$(ns_pids "$1")" ] || say "processes still in $1: $(ns_pids "$1" | tr '\n' ' ')"
}
# Wait until a command succeeds, at most $1 seconds.
wait_for() {
  local secs=$1 i
  shift
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}

# ---------------------------------------------------------------------------------------------- network
hub_up() {
  [ -e "/run/netns/$HUB" ] || ip netns add "$HUB"
  ip -n "$HUB" link set lo up
  if ! ip -n "$HUB" link show br0 >/dev/null 2>&1; then
    ip -n "$HUB" link add br0 type bridge
    ip -n "$HUB" addr add "$HUB_ADDR/24" dev br0
  fi
  ip -n "$HUB" link set br0 up
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    ip link add "$HOST_IF" type veth peer name uplink netns "$HUB"
    ip addr add "$HOST_ADDR/24" dev "$HOST_IF"
    ip -n "$HUB" link set uplink master br0
  fi
  ip link set "$HOST_IF" up
  ip -n "$HUB" link set uplink up
}

node_net_up() {
  local node=$1 ns
  ns=$(node_ns "$node")
  [ -e "/run/netns/$ns" ] || ip netns add "$ns"
  if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
    ip -n "$HUB" link add "$node" type veth peer name eth0 netns "$ns"
    ip -n "$HUB" link set "$node" master br0 up
    ip -n "$ns" addr add "$(node_addr "$node")/24" dev eth0
  fi
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route replace default via "$HUB_ADDR"
}

# ---------------------------------------------------------------------------------------------- registry
# A CA made here (the lab's, like the one Pier makes for a swarm), a certificate for the hub's address,
# an htpasswd file (bcrypt, what distribution accepts) with a random password kept in a 0600 file.
registry_files() {
  local r=$LAB/registry
  mkdir -p "$r/data" "$LAB/client"
  chmod 700 "$r" "$LAB/client"
  if [ ! -s "$r/tls.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=Pier swarm lab CA" \
      -keyout "$r/ca.key" -out "$r/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$HUB_ADDR" -keyout "$r/tls.key" -out "$r/tls.csr" 2>/dev/null
    openssl x509 -req -in "$r/tls.csr" -CA "$r/ca.crt" -CAkey "$r/ca.key" -CAcreateserial -days 30 \
      -extfile <(printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n' "$HUB_ADDR") -out "$r/tls.crt" 2>/dev/null
  fi
  if [ ! -s "$r/password" ]; then
    (umask 077 && openssl rand -hex 16 >"$r/password")
    htpasswd -Bbn "$REGISTRY_USER" "$(cat "$r/password")" >"$r/htpasswd" 2>/dev/null
  fi
  cat >"$r/config.yml" <<EOF
version: 0.1
log:
  level: warn
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: $r/data
  delete:
    enabled: true
http:
  addr: $REGISTRY
  tls:
    certificate: $r/tls.crt
    key: $r/tls.key
auth:
  htpasswd:
    realm: pier-swarm-lab
    path: $r/htpasswd
EOF
}

registry_up() {
  command -v docker-registry >/dev/null || die "docker-registry is missing: run scripts/setup.sh --for-tests (it installs Debian's docker-registry)"
  command -v htpasswd >/dev/null || die "htpasswd is missing: run scripts/setup.sh --for-tests (apache2-utils)"
  registry_files
  if [ -z "$(ns_pid_of "$HUB" docker-registry)" ]; then
    ip netns exec "$HUB" setsid docker-registry serve "$LAB/registry/config.yml" \
      >"$LAB/registry/registry.log" 2>&1 </dev/null &
  fi
  registry_ready() { curl -sS --max-time 2 --cacert "$LAB/registry/ca.crt" -o /dev/null -w '%{http_code}' "https://$REGISTRY/v2/" | grep -q 401; }
  wait_for 20 registry_ready || {
    tail -n 20 "$LAB/registry/registry.log" >&2
    die "the registry did not answer on https://$REGISTRY/v2/ within 20 s"
  }
}

# ---------------------------------------------------------------------------------------------- nodes
node_files() {
  local node=$1 d
  d=$(node_dir "$node")
  mkdir -p "$d/data" "$d/exec" "$d/etc-docker/certs.d/$REGISTRY"
  cp "$LAB/registry/ca.crt" "$d/etc-docker/certs.d/$REGISTRY/ca.crt"
  # userland-proxy false: published ports (the edge's, on the manager) through the kernel's DNAT, as on the
  # dockerd Pier's set-up starts (ADR 0007); with docker-proxy the swarm's edge measured at half speed.
  cat >"$d/daemon.json" <<EOF
{
  "data-root": "$d/data",
  "exec-root": "$d/exec",
  "pidfile": "$d/exec/docker.pid",
  "hosts": ["unix://$d/docker.sock"],
  "deprecated-key-path": "$d/key.json",
  "cgroup-parent": "/$PFX-$node",
  "storage-driver": "overlay2",
  "userland-proxy": false,
  "log-level": "warn"
}
EOF
}

# The host's cgroup mounts under /sys/fs/cgroup, as "dir:fstype:options" (`ip netns exec` mounts a fresh
# /sys in the node, which hides them; the node mounts them again).
cgroup_layout() {
  awk '{ for (i = 7; $i != "-"; i++); fs = $(i + 1); opts = $(i + 3); sub(/^rw,?/, "", opts)
         if ((fs == "cgroup" || fs == "cgroup2") && $5 ~ /^\/sys\/fs\/cgroup/) print $5 ":" fs ":" opts }' /proc/self/mountinfo
}

# Runs inside the node's namespaces (network, mount, UTS, PID), as the child of its init.
node_main() {
  local node=$1 d spec dir fs opts
  d=$(node_dir "$node")
  hostname "$node"
  mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
  for spec in $CGROUP_LAYOUT; do
    IFS=: read -r dir fs opts <<<"$spec"
    [ "$dir" = /sys/fs/cgroup ] && { mount -t "$fs" -o "${opts:-none}" "$fs" /sys/fs/cgroup && continue; }
    mkdir -p "$dir"
    if [ -n "$opts" ]; then mount -t "$fs" -o "$opts" "$fs" "$dir"; else mount -t "$fs" "$fs" "$dir"; fi
  done
  # containerd 1.6 keeps shim sockets in /run/containerd/s (shared with the machine's own containerd);
  # a persistent exec root keeps stale pid files that make a restarted node wait for a dead containerd.
  mount -t tmpfs tmpfs "$d/exec"
  mount -t tmpfs tmpfs /run/containerd
  [ -d /run/docker ] && mount -t tmpfs tmpfs /run/docker
  # The node's own /etc/docker: certs.d trusts the lab's CA for the registry, nothing of the host's.
  mount --bind "$d/etc-docker" /etc/docker
  exec dockerd --config-file "$d/daemon.json"
}

node_running() { [ -n "$(ns_pid_of "$(node_ns "$1")" dockerd)" ]; }

node_start() {
  local node=$1 d
  d=$(node_dir "$node")
  node_net_up "$node"
  node_files "$node"
  if ! node_running "$node"; then
    ns_drain "$(node_ns "$node")" 5
    rm -f "$d/docker.sock"
    CGROUP_LAYOUT=$(cgroup_layout | tr '\n' ' ') setsid ip netns exec "$(node_ns "$node")" \
      unshare --uts --pid --fork --mount-proc --propagation slave /usr/bin/docker-init -- \
      bash "$SELF" __node "$node" >>"$d/dockerd.log" 2>&1 </dev/null &
  fi
  wait_for 30 dk "$node" version || {
    tail -n 20 "$d/dockerd.log" >&2
    die "$node: dockerd did not answer within 30 s (log: $d/dockerd.log)"
  }
}

node_kill() {
  local node=$1 pid
  pid=$(ns_pid_of "$(node_ns "$node")" dockerd)
  [ -n "$pid" ] || {
    say "$node: dockerd is not running"
    return 0
  }
  kill -9 "$pid"
  # The node's init exits with dockerd, and the kernel then ends every process of its PID namespace.
  ns_drain "$(node_ns "$node")" 15
}

node_login() {
  dk "$1" login -u "$REGISTRY_USER" --password-stdin "$REGISTRY" <"$LAB/registry/password" >/dev/null 2>&1 ||
    die "$1 cannot log in to the registry at $REGISTRY (TLS or authentication): see $LAB/registry/registry.log"
}

# ---------------------------------------------------------------------------------------------- swarm
swarm_state() { dk "$1" info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null || echo unreachable; }

swarm_up() {
  local n=$1 node token
  if [ "$(swarm_state node1)" != active ]; then
    dk node1 swarm init --advertise-addr "$(node_addr node1)" --listen-addr "$(node_addr node1):2377" \
      --dispatcher-heartbeat 2s >/dev/null
  fi
  token=$(dk node1 swarm join-token -q worker)
  for ((i = 2; i <= n; i++)); do
    node=node$i
    [ "$(swarm_state "$node")" = active ] && continue
    dk "$node" swarm join --token "$token" --advertise-addr "$(node_addr "$node")" "$(node_addr node1):2377" >/dev/null
  done
  all_ready() { [ "$(dk node1 node ls --format '{{.Status}}' | grep -c '^Ready$')" -ge "$n" ]; }
  wait_for 30 all_ready || die "the swarm does not have $n Ready nodes after 30 s: $(dk node1 node ls 2>&1)"
}

# ---------------------------------------------------------------------------------------------- commands
print_info() {
  local json=$1 nodes node first=1
  nodes=$(known_nodes)
  if [ "$json" = 1 ]; then
    printf '{"dockerHost":"unix://%s","managerAddress":"%s:2377","hostAddress":"%s",' \
      "$(node_sock node1)" "$(node_addr node1)" "$HOST_ADDR"
    printf '"registry":{"address":"%s","user":"%s","passwordFile":"%s","caFile":"%s"},"dockerConfig":"%s","nodes":[' \
      "$REGISTRY" "$REGISTRY_USER" "$LAB/registry/password" "$LAB/registry/ca.crt" "$LAB/client"
    for node in $nodes; do
      [ $first = 1 ] || printf ','
      first=0
      printf '{"name":"%s","address":"%s","dockerHost":"unix://%s","running":%s}' "$node" "$(node_addr "$node")" \
        "$(node_sock "$node")" "$(node_running "$node" && echo true || echo false)"
    done
    printf ']}\n'
  else
    echo "DOCKER_HOST=unix://$(node_sock node1)"
    echo "manager: $(node_addr node1):2377 (from the host: $HOST_ADDR is this machine's address on the lab bridge)"
    echo "registry: https://$REGISTRY (user $REGISTRY_USER, password in $LAB/registry/password, CA $LAB/registry/ca.crt)"
    echo "DOCKER_CONFIG=$LAB/client (logged in to the registry)"
    for node in $nodes; do
      echo "$node: $(node_addr "$node") unix://$(node_sock "$node") $(node_running "$node" && echo running || echo stopped)"
    done
  fi
}

cmd_up() {
  local n=${1:-3} i
  [[ $n =~ ^[1-9]$ ]] || die "up takes a number of nodes from 1 to 9, not '$n'"
  lock_take
  mkdir -p "$LAB"
  hub_up
  registry_up
  for ((i = 1; i <= n; i++)); do node_start "node$i"; done
  swarm_up "$n"
  for ((i = 1; i <= n; i++)); do node_login "node$i"; done
  print_info "$JSON"
}

cmd_status() {
  [ -d "$LAB" ] || {
    [ "$JSON" = 1 ] && echo '{"up":false,"nodes":[]}' || echo "the lab is down"
    return 0
  }
  if [ "$JSON" = 1 ]; then
    print_info 1 | sed 's/^{/{"up":true,"registryRunning":'"$([ -n "$(ns_pid_of "$HUB" docker-registry)" ] && echo true || echo false)"',/'
  else
    print_info 0
    dk node1 node ls 2>/dev/null || echo "node1 (the manager) does not answer"
  fi
}

# The mount points under the lab's directory seen from the host (not another lab's, whose directory may
# start with this one's name).
lab_mounts() { awk -v lab="$LAB" '$5 == lab || index($5, lab "/") == 1 {print $5}' /proc/self/mountinfo; }

# What `down` must leave: no namespace, no veth, no process, no mount, no cgroup, no directory.
leftovers() {
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep "^$PFX-" || true); do echo "network namespace $ns"; done
  ip link show "$HOST_IF" >/dev/null 2>&1 && echo "veth $HOST_IF"
  { pgrep -af -- "$LAB/" || true; } | sed 's/^/process /'
  lab_mounts | sed 's/^/mount /'
  { ls -d /sys/fs/cgroup/*/"$PFX"-* 2>/dev/null || true; } | sed 's/^/cgroup /'
  [ -e "$LAB" ] && echo "directory $LAB"
  return 0
}

cmd_down() {
  local ns node m left
  if [ -n "${PIER_SWARM_LAB_OWNER:-}" ]; then lock_check; else lock_check by_hand; fi
  for node in $(known_nodes); do node_kill "$node" >/dev/null 2>&1 || true; done
  for ns in $(ip netns list | awk '{print $1}' | grep "^$PFX-" || true); do
    ns_pids "$ns" | xargs -r kill -9 2>/dev/null || true
    ns_drain "$ns" 10
    ip netns del "$ns"
  done
  ip link del "$HOST_IF" 2>/dev/null || true
  # Mounts of the lab seen from the host (none are expected: every node mounts in its own namespace).
  for m in $(lab_mounts | sort -r); do umount -l "$m" || true; done
  # The nodes' cgroup parents, deepest first.
  find /sys/fs/cgroup/*/ -maxdepth 4 -depth -type d -path "*/$PFX-*" -exec rmdir {} + 2>/dev/null || true
  # The nodes' dockerd logs outlive the lab (the last down's, per lab): a node that died says why there.
  local logs=${TMPDIR:-/tmp}/pier-swarm-lab-logs/$PFX
  if [ -n "$(known_nodes)" ]; then
    rm -rf "$logs" && mkdir -p "$logs"
    for node in $(known_nodes); do cp "$(node_dir "$node")/dockerd.log" "$logs/$node.log" 2>/dev/null || true; done
  fi
  rm -rf "$LAB"
  left=$(leftovers)
  [ -z "$left" ] || die "down left: $(echo "$left" | tr '\n' ';')"
  lock_release
  say "down: nothing left"
}

JSON=0
args=()
for a in "$@"; do
  if [ "$a" = --json ]; then JSON=1; else args+=("$a"); fi
done
set -- "${args[@]}"
case "${1:-}" in
lock)
  lock_take
  exit 0
  ;;
unlock)
  lock_check
  lock_release
  exit 0
  ;;
esac
[ "$(id -u)" = 0 ] || die "run as root (network namespaces, mounts)"
case "${1:-}" in
up) cmd_up "${2:-3}" ;;
kill)
  valid_node "${2:-}"
  lock_check
  node_kill "$2"
  ;;
start)
  valid_node "${2:-}"
  [ -d "$(node_dir "$2")" ] || die "$2 is not a node of the lab (up first)"
  lock_check
  node_start "$2"
  ;;
status) cmd_status ;;
down) cmd_down ;;
leftovers) leftovers ;;
__node) node_main "$2" ;;
*) die "usage: swarm-lab up N [--json] | kill NODE | start NODE | status [--json] | down | lock | unlock" ;;
esac
