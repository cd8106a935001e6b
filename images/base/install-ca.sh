#!/bin/sh
# mmdebstrap customize hook: puts the extra CA bundle into the image's trust store.
# Usage: install-ca.sh <rootfs> <CA bundle (PEM, one or more certificates)>
# update-ca-certificates appends every certificate of the bundle to the image's
# /etc/ssl/certs/ca-certificates.crt, the file SSL_CERT_FILE and NODE_EXTRA_CA_CERTS point to.
set -eu
root=$1 ca=$2
cp "$ca" "$root/usr/local/share/ca-certificates/pier-extra-ca.crt"
# Its only noise is openssl rehash skipping multi-certificate files: shown only if it fails.
out=$(chroot "$root" update-ca-certificates 2>&1) || { echo "$out" >&2; exit 1; }
# Check: the bundle's last certificate (its last base64 line) is in the image's bundle.
last=$(grep -v -e '^-----' -e '^[[:space:]]*$' "$ca" | tail -n 1 | tr -d '\r')
if ! grep -qF "$last" "$root/etc/ssl/certs/ca-certificates.crt"; then
  echo "setup: $ca did not end up in the image's /etc/ssl/certs/ca-certificates.crt" >&2
  exit 1
fi
