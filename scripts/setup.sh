#!/usr/bin/env bash
# Idempotent set-up for `npm start` and `npm test` on a fresh Debian machine: Debian packages, npm
# packages, dockerd, and Pier's local images. Quick when everything is already there (well under 1 s).
# Usage: setup.sh [--for-tests]. Env: PIER_EXTRA_CA_CERTS (CA bundle put into the images), PIER_CACHE_DIR (downloaded tarballs).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "setup: $*" >&2; }

# Concurrent runs (several checkouts, `npm test` beside `npm start`) wait for each other instead of
# starting two daemons or building an image twice; the second then finds everything in place.
# fd 9 must not leak into dockerd (it would hold the lock for ever): see `9>&-` below.
exec 9>/tmp/pier-setup.lock
if ! flock -n 9; then
  say "waiting for another set-up to finish"
  flock 9
fi

# 1. Debian packages. The edge is HAProxy (docs/adr/0001).
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v haproxy >/dev/null || missing+=(haproxy)
command -v git >/dev/null || missing+=(git)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
{ command -v ssh-keygen && command -v ssh; } >/dev/null || missing+=(openssh-client)
[ -r /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
# The edge's default TLS certificate is made with openssl at first start (docs/adr/0018).
command -v openssl >/dev/null || missing+=(openssl)
# Pier's own firewall rules between apps (docs/adr/0019) are an nftables table, applied with `nft`.
{ command -v nft || [ -x /usr/sbin/nft ]; } >/dev/null || missing+=(nftables)
# `npm test` only (`--for-tests`): the console's browser tests drive Debian's Chromium (Playwright's own
# browser download cannot work here), and the HTTPS tests run Debian's pebble, an ACME test server.
if [ "${1:-}" = "--for-tests" ]; then
  command -v chromium >/dev/null || missing+=(chromium)
  command -v pebble >/dev/null || missing+=(pebble)
  command -v curl >/dev/null || missing+=(curl)
  # The swarm lab's test image is a static busybox (httpd and wget in 2 MB), imported on the lab's manager.
  [ -x /bin/busybox ] || missing+=(busybox-static)
fi
# A swarm (PIER_ENGINE=swarm, and the swarm lab of the tests: docs/adr/0030) needs the image registry the
# nodes pull release images from: Debian's docker-registry (distribution 2.8), with htpasswd (bcrypt) for
# its users.
if [ "${1:-}" = "--for-tests" ] || [ "${PIER_ENGINE:-docker}" = swarm ]; then
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  command -v htpasswd >/dev/null || missing+=(apache2-utils)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then say "missing Debian packages: ${missing[*]} (run as root, or install them)"; exit 1; fi
  say "installing Debian packages: ${missing[*]}"
  # The packages' services are not started (Pier runs its own dockerd and HAProxy; a system HAProxy
  # would take its ports): a policy-rc.d that refuses, as Docker images have, for the install only.
  policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
  fi
  # An unreachable third-party source makes `apt-get update` fail while Debian's indexes are fine.
  apt-get update -qq >&2 || say "apt-get update reported errors; installing anyway"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ -n "$policy" ]; then rm -f "$policy"; trap - EXIT; fi
fi

# 2. npm packages (better-sqlite3 compiles from source here: about 100 s, once).
# `npm install`, not `npm ci`: npm 11 writes lock files without the other platforms' optional packages
# (@biomejs/cli-*), and its own `npm ci` then refuses them as out of sync ("Missing: ... from lock
# file"). With a lock file in sync, `npm install` installs exactly its versions and leaves it as is.
lock_hash() { cat package.json package-lock.json | sha256sum | cut -d' ' -f1; }
if [ ! -f node_modules/.pier-lock-hash ] || [ "$(cat node_modules/.pier-lock-hash)" != "$(lock_hash)" ]; then
  say "installing npm packages"
  npm install --no-audit --no-fund --loglevel=error </dev/null >&2
  lock_hash >node_modules/.pier-lock-hash
fi

# 3. dockerd. The Debian CLI (/usr/bin/docker) matches the Debian daemon's API version.
DOCKER=/usr/bin/docker
[ -x "$DOCKER" ] || DOCKER=docker
export DOCKER
dockerd_alive() { [ "$(cat "/proc/$(cat /var/run/docker.pid 2>/dev/null)/comm" 2>/dev/null)" = dockerd ]; }
if ! "$DOCKER" info >/dev/null 2>&1; then
  log=/var/log/pier-dockerd.log
  if dockerd_alive; then
    say "dockerd is running but not answering yet; waiting"
  else
    # Published ports through the kernel's DNAT rather than one docker-proxy process each: the edge's
    # requests to an instance's loopback port go ~2x faster and each app saves ~1.5 MiB (ADR 0007). A
    # daemon.json that sets it already wins (dockerd refuses the same setting twice).
    flags=(--userland-proxy=false)
    grep -qs '"userland-proxy"' /etc/docker/daemon.json && flags=()
    say "starting dockerd ${flags[*]} (log: $log)"
    setsid nohup dockerd "${flags[@]}" >"$log" 2>&1 </dev/null 9>&- &
  fi
  # Up to 60 s; a daemon that has exited (no live pid file after 5 s) is not waited for.
  for i in $(seq 1 120); do
    "$DOCKER" info >/dev/null 2>&1 && break
    [ "$i" -lt 10 ] || dockerd_alive || break
    sleep 0.5
  done
  if ! "$DOCKER" info >/dev/null 2>&1; then
    say "dockerd did not come up (it has exited, or 60 s passed); the end of $log:"
    tail -n 20 "$log" >&2 || true
    exit 1
  fi
fi

# 4. Pier's local images (no image registry is needed or reachable).
# The base image's generation goes up when its package list changes; images built from it record its id.
export PIER_BASE_GENERATION=3
label() { "$DOCKER" image inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }
if [ "$(label pier/base:bookworm pier.base.generation)" != "$PIER_BASE_GENERATION" ]; then
  say "building pier/base:bookworm (Debian minbase, git, openssh-client, libatomic1 and the CA bundle, about 40 s)"
  images/base/build.sh
fi
base_id=$("$DOCKER" image inspect -f '{{.Id}}' pier/base:bookworm)
node_dockerfile=$(sha256sum images/node/Dockerfile | cut -c1-16)
if [ "$(label pier/node:22 pier.base)" != "$base_id" ] || [ "$(label pier/node:22 pier.node.dockerfile)" != "$node_dockerfile" ]; then
  say "building pier/node:22 (Node.js 22.16.0 and npm 10.9.2 from the npm registry)"
  images/node/build.sh 22.16.0 10.9.2 pier/node:22
fi
# The PHP runtime's image (docs/adr/0012): Debian trixie's PHP 8.4, composer and nginx (pier/php-os:8.4,
# rebuilt when its generation goes up), then Pier's phpserver on top (pier/php:8.4, rebuilt when
# src/phpserver changes).
export PIER_PHP_GENERATION=1
if [ "$(label pier/php-os:8.4 pier.php.generation)" != "$PIER_PHP_GENERATION" ]; then
  say "building pier/php-os:8.4 (Debian trixie: PHP 8.4 with its extensions, composer, nginx; about 2 minutes)"
  images/php/build-os.sh
fi
php_os_id=$("$DOCKER" image inspect -f '{{.Id}}' pier/php-os:8.4)
if [ "$(label pier/php:8.4 pier.phpserver)" != "$(images/php/hash.sh)" ] || [ "$(label pier/php:8.4 pier.base)" != "$php_os_id" ]; then
  say "building pier/php:8.4 (phpserver on pier/php-os:8.4)"
  # The engine's notice that the classic builder is deprecated is its only output: shown only on failure.
  out=$(images/php/build.sh 2>&1) || { echo "$out" >&2; exit 1; }
fi
# The add-on images (docs/adr/0015-addons.md): valkey, PostgreSQL, MariaDB and the fs buckets' tar from Debian trixie, about
# 40 s each.
export PIER_ADDON_GENERATION=3
for addon in kv:pier/addon-kv:8 postgresql:pier/addon-postgresql:17 mysql:pier/addon-mysql:11 fs:pier/addon-fs:1; do
  if [ "$(label "${addon#*:}" pier.addon.generation)" != "$PIER_ADDON_GENERATION" ]; then
    say "building ${addon#*:} (the ${addon%%:*} add-on, from Debian trixie packages)"
    images/addons/build.sh "${addon%%:*}"
  fi
done
# The image of Pier's work on the swarm nodes (docs/adr/0019's guard, docs/adr/0030's sweep): Debian trixie's
# nft and socat with their libraries and a static busybox (about 16 MB), about 30 s, built once. Generation
# 3: socat for the sweep (2 was the slim guard, 1 the whole minbase).
export PIER_GUARD_GENERATION=3
if [ "$(label pier/guard:1 pier.guard.generation)" != "$PIER_GUARD_GENERATION" ]; then
  say "building pier/guard:1 (nftables and socat for the swarm nodes' guard and sweep, from Debian trixie)"
  images/guard/build.sh
fi
