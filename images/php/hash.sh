#!/bin/sh
# The hash of what pier/php:8.4 adds to pier/php-os:8.4 (src/phpserver and the Dockerfile).
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" && find src/phpserver images/php/Dockerfile -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
