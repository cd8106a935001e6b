#!/usr/bin/env bash
# Builds pier/base:bookworm: Debian bookworm minbase with ca-certificates and the configured CA bundle
# (PIER_EXTRA_CA_CERTS, default the host's), so TLS through a re-signing proxy works inside containers.
# PIER_BASE_GENERATION (set by scripts/setup.sh) is recorded as a label: a newer one rebuilds the image.
# The Debian mirror is the host's own (its apt sources), else deb.debian.org. About 35 s.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
check_ca

mirror=$(debian_mirror 'bookworm')

here=$(cd "$(dirname "$0")" && pwd)
work_dir
echo "setup: mmdebstrap bookworm from $mirror" >&2
# git and openssh-client: npm, Yarn and Bun fetch git dependencies (git+ssh:// with the app's private key).
# libatomic1: Node.js 26 and later link against it.
mmdebstrap --quiet --variant=minbase --include=ca-certificates,git,openssh-client,libatomic1 \
  --customize-hook="'$here/install-ca.sh' \"\$1\" '$work/extra-ca.crt'" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "$work/rootfs.tar" "$mirror"
"$docker" import \
  --change "LABEL pier.managed=true pier.base.generation=${PIER_BASE_GENERATION:?}" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["/bin/bash"]' \
  "$work/rootfs.tar" pier/base:bookworm >/dev/null
