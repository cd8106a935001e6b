#!/usr/bin/env bash
# Idempotent set-up for `npm start` and `npm test` on a fresh Debian machine: Debian packages, npm
# packages, dockerd, and Pier's local images. Quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "setup: $*" >&2; }

# 1. Debian packages.
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v haproxy >/dev/null || missing+=(haproxy)
command -v git >/dev/null || missing+=(git)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v ssh-keygen >/dev/null || missing+=(openssh-client)
command -v ssh >/dev/null || missing+=(openssh-client)
[ -r /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then say "missing Debian packages: ${missing[*]} (run as root, or install them)"; exit 1; fi
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. npm packages (better-sqlite3 compiles from source here: about 100 s, once).
# `npm install` (not `npm ci`): npm 11 writes lock files whose platform-specific optional packages its
# own `npm ci` then rejects as out of sync. The lock file still pins every version.
lock_hash() { cat package.json package-lock.json | sha256sum | cut -d' ' -f1; }
if [ ! -f node_modules/.pier-lock-hash ] || [ "$(cat node_modules/.pier-lock-hash)" != "$(lock_hash)" ]; then
  say "installing npm packages"
  npm install --no-audit --no-fund --loglevel=error >&2
  lock_hash > node_modules/.pier-lock-hash
fi

# 3. dockerd. The Debian CLI (/usr/bin/docker) matches the Debian daemon.
DOCKER=/usr/bin/docker
[ -x "$DOCKER" ] || DOCKER=docker
export DOCKER
if ! "$DOCKER" info >/dev/null 2>&1; then
  say "starting dockerd"
  setsid nohup dockerd >/var/log/pier-dockerd.log 2>&1 </dev/null &
  for _ in $(seq 1 60); do "$DOCKER" info >/dev/null 2>&1 && break; sleep 1; done
  if ! "$DOCKER" info >/dev/null 2>&1; then
    say "dockerd did not come up within 60 s; the end of /var/log/pier-dockerd.log:"
    tail -n 20 /var/log/pier-dockerd.log >&2
    exit 1
  fi
fi

# 4. Pier's local images (no registry is needed).
if ! "$DOCKER" image inspect pier/base:bookworm >/dev/null 2>&1; then
  say "building pier/base:bookworm (Debian minbase + CA bundle, about 30 s)"
  images/base/build.sh
fi
if ! "$DOCKER" image inspect pier/node:22 >/dev/null 2>&1; then
  say "building pier/node:22 (Node.js 22.16.0 and npm 10.9.2 from the npm registry)"
  images/node/build.sh 22.16.0 10.9.2 pier/node:22
fi
