#!/bin/bash
# mklib.sh STAGING_ROOT DEST_LIB : copy Debian's /usr/share/php tree into an app's lib/ dir,
# make the pkg-php-tools autoload.php files location-independent, write lib/autoload.php
set -euo pipefail
src="$1/usr/share/php"; dest="$2"
mkdir -p "$dest"; cp -a "$src"/. "$dest"/
cd "$dest"
# absolute '/usr/share/php/X' -> dirname(__DIR__, depth).'/X'
find . -name autoload.php | while read -r f; do
  rel="${f#./}"; depth=$(awk -F/ '{print NF-1}' <<<"$rel")
  sed -i "s#'/usr/share/php/#\\\\dirname(__DIR__, $depth).'/#g" "$f"
done
{ echo '<?php'; echo '// generated: loads the pkg-php-tools autoloaders of the Debian packages copied here'
  find . -name autoload.php ! -path ./autoload.php | sort | sed "s#^\./#require_once __DIR__.'/#; s#\$#';#"; } > autoload.php
