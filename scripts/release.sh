#!/usr/bin/env bash
# Builds the release binaries of buzz-lite (RL-32): static, cgo-free,
# -trimpath, the version stamped, with their SHA-256 sums.
#
#   scripts/release.sh [VERSION]
#
# VERSION defaults to `git describe --tags --always --dirty`. Writes
# dist/buzz-lite-VERSION-linux-amd64, -linux-arm64 and -linux-armv7 (32-bit
# Raspberry Pi OS) and dist/SHA256SUMS; BUZZ_LITE_RELEASE_TARGETS (e.g.
# "linux/arm64") builds fewer, DIST another directory than dist/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: scripts/release.sh [VERSION]"
if [ $# -gt 1 ]; then
  echo "release.sh: want at most one argument, the version" >&2; echo "$usage" >&2; exit 2
fi
case "${1:-}" in
  -h | --help) echo "$usage"; exit 0 ;;
  -*) echo "release.sh: unknown flag $1" >&2; echo "$usage" >&2; exit 2 ;;
esac
version=${1:-$(git describe --tags --always --dirty)}
if ! [[ $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
  echo "release.sh: version '$version' is not a plain tag (letters, digits, . _ + -)" >&2; exit 2
fi
targets=${BUZZ_LITE_RELEASE_TARGETS:-linux/amd64 linux/arm64 linux/arm/7}
dist=${DIST:-dist}

# Every target is checked before anything is built or written.
builds=()
for target in $targets; do
  IFS=/ read -r goos goarch goarm <<<"$target"
  case "$goarch" in
    arm) [ -n "$goarm" ] || { echo "release.sh: target $target: say the ARM version, e.g. linux/arm/7" >&2; exit 2; }
         suffix=armv$goarm ;;
    *) [ -n "$goarch" ] && [ -z "$goarm" ] || { echo "release.sh: target $target: want GOOS/GOARCH, and a version for arm only" >&2; exit 2; }
       suffix=$goarch ;;
  esac
  builds+=("$goos $goarch ${goarm:--} buzz-lite-$version-$goos-$suffix")
done

mkdir -p "$dist"
names=()
for b in "${builds[@]}"; do
  read -r goos goarch goarm name <<<"$b"
  [ "$goarm" != - ] || goarm=
  echo "building $name"
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch GOARM=$goarm \
    go build -trimpath -ldflags="-s -w -X main.version=$version" -o "$dist/$name" .
  names+=("$name")
done
(cd "$dist" && sha256sum "${names[@]}" >SHA256SUMS)
echo "wrote $dist/SHA256SUMS:"
cat "$dist/SHA256SUMS"
