#!/usr/bin/env bash
# Builds the container image of linerate: docker/Dockerfile, FROM scratch with the static
# x86_64 executable that scripts/static.sh builds (musl). No registry is used: the image is
# built from a context that holds only the binary and stays in the local Docker engine.
# Prints the image's tag (last line of stdout, nothing else on stdout):
# linerate:VERSION-HASH, HASH being the first 12 hex digits of the binary's SHA-256, so the
# tag names the exact executable inside.
#
# Usage: bash scripts/image.sh                 # build the static binary, then the image
#        bash scripts/image.sh --binary FILE   # an already built static executable
#        bash scripts/image.sh --tag NAME:TAG  # another tag
# Needs a running Docker engine (DOCKER_HOST is honoured).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=
tag=
while (($#)); do
    case "$1" in
    --binary) bin=${2:?--binary needs a FILE}; shift 2 ;;
    --tag) tag=${2:?--tag needs NAME:TAG}; shift 2 ;;
    *) echo "scripts/image.sh: unknown argument '$1' (give --binary FILE or --tag NAME:TAG)" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ]; then
    bin=$(bash scripts/static.sh | tail -n 1)
fi
if [ ! -x "$bin" ]; then
    echo "scripts/image.sh: $bin is not an executable file" >&2
    exit 2
fi
# FROM scratch has no libc and no program interpreter: only a static executable runs there.
if readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
    echo "scripts/image.sh: $bin is not static (it asks for a program interpreter): build it with scripts/static.sh" >&2
    exit 2
fi
if [ -z "$tag" ]; then
    version=$("$bin" --version | awk '{ print $2 }')
    hash=$(sha256sum "$bin" | cut -c1-12)
    tag="linerate:$version-$hash"
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp docker/Dockerfile "$ctx/Dockerfile"
cp "$bin" "$ctx/linerate"
# The classic builder: it needs no BuildKit (buildx) component, which Debian's docker.io
# lacks; the Dockerfile has no step that BuildKit would speed up.
DOCKER_BUILDKIT=0 docker build --quiet --tag "$tag" "$ctx" >&2
echo "$tag"
