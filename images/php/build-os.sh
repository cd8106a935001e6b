#!/usr/bin/env bash
# Builds pier/php-os:8.4, the Debian part of the PHP runtime's image: trixie minbase with PHP 8.4 from
# Debian (CLI, FPM, the extensions of the contract's section 2.5 that Debian packages, uopz), composer,
# nginx in front of php-fpm (docs/adr/0012) and the configured CA bundle (PIER_EXTRA_CA_CERTS, default the
# host's). images/php/Dockerfile adds Pier's `phpserver` program on top (pier/php:8.4), a quick rebuild.
# PIER_PHP_GENERATION (set by scripts/setup.sh) is recorded as a label: a newer one rebuilds the image.
# The Debian mirror is the host's own for trixie if it has one, else deb.debian.org. About 2 minutes.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
check_ca

mirror=$(debian_mirror 'trixie')

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work_dir
# The extensions of section 2.5 that Debian packages (docs/php-runtime.md lists the others and why).
# Built into php8.4-common or the CLI: calendar ctype exif fileinfo filter ftp gettext iconv pdo phar posix
# shmop sockets sodium sysvmsg sysvsem sysvshm tokenizer openssl zlib session.
packages=(
  ca-certificates nginx-light
  php8.4-cli php8.4-fpm php8.4-opcache php8.4-readline
  php8.4-bcmath php8.4-bz2 php8.4-curl php8.4-dba php8.4-gd php8.4-gmp php8.4-intl php8.4-ldap
  php8.4-mbstring php8.4-mysql php8.4-pgsql php8.4-sqlite3 php8.4-soap php8.4-tidy php8.4-xml php8.4-zip
  php8.4-apcu php8.4-igbinary php8.4-imagick php8.4-redis php8.4-ssh2 php8.4-yaml php8.4-zstd
  php8.4-uopz composer unzip git openssh-client
)
echo "setup: mmdebstrap trixie from $mirror" >&2
mmdebstrap --quiet --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
  --customize-hook="'$root/images/base/install-ca.sh' \"\$1\" '$work/extra-ca.crt'" \
  --customize-hook='rm -f "$1"/etc/nginx/sites-enabled/default' \
  --customize-hook='chroot "$1" phpdismod -v 8.4 -s ALL uopz' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  trixie "$work/rootfs.tar" "$mirror"
"$docker" import \
  --change "LABEL pier.managed=true pier.php.generation=${PIER_PHP_GENERATION:?}" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt COMPOSER_ALLOW_SUPERUSER=1' \
  --change 'CMD ["/bin/bash"]' \
  "$work/rootfs.tar" pier/php-os:8.4 >/dev/null
