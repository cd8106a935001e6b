#!/usr/bin/env bash
# Builds pier/base:bookworm: Debian bookworm minbase with ca-certificates and the configured CA bundle
# (PIER_EXTRA_CA_CERTS, default the host's), so TLS through a re-signing proxy works inside containers.
set -euo pipefail
ca=${PIER_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
docker=${DOCKER:-docker}
[ -r "$ca" ] || { echo "setup: PIER_EXTRA_CA_CERTS=$ca is not a readable file" >&2; exit 1; }
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\/\{0,1\}\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb \(http[^ ]*\) bookworm .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -n1)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$ca" "$work/extra-ca.crt"
mmdebstrap --quiet --variant=minbase --include=ca-certificates \
  --customize-hook="cp '$work/extra-ca.crt' \"\$1/usr/local/share/ca-certificates/pier-extra-ca.crt\"" \
  --customize-hook='chroot "$1" update-ca-certificates >/dev/null' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "$work/rootfs.tar" "$mirror"
"$docker" import \
  --change 'LABEL pier.managed=true' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["/bin/bash"]' \
  "$work/rootfs.tar" pier/base:bookworm >/dev/null
