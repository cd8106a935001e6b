#!/usr/bin/env bash
# Builds pier/php:8.4 from pier/php-os:8.4 (images/php/build-os.sh) and src/phpserver, recording the
# hash of src/phpserver and the Dockerfile as the label pier.phpserver and the OS image's id as pier.base:
# scripts/setup.sh rebuilds it when either changes. A few seconds.
set -euo pipefail
docker=${DOCKER:-docker}
root=$(cd "$(dirname "$0")/../.." && pwd)
hash=$("$root/images/php/hash.sh")
base_id=$("$docker" image inspect -f '{{.Id}}' pier/php-os:8.4)
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/src"
cp -r "$root/src/phpserver" "$ctx/src/phpserver"
"$docker" build -q -f "$root/images/php/Dockerfile" --label "pier.phpserver=$hash" --label "pier.base=$base_id" \
  -t pier/php:8.4 "$ctx" >/dev/null
