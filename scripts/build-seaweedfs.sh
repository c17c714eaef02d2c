#!/usr/bin/env bash
# Builds SeaweedFS' `weed` (the S3-compatible server of tests/object_store.rs)
# from the Go module proxy into target/tools/weed-<version>, unless it is
# there already. Its go.mod has replace directives, which `go install pkg@v`
# refuses, so the module is downloaded and built in a scratch copy. Only the
# tests run it: it is compiled without optimisations, as the other test-only
# peers are (scripts/build-peers.sh), a quarter less to build.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v0.0.0-20261109003541-7506e5f91cd6
out="$PWD/target/tools/weed-$version"
if [ -x "$out" ]; then
    echo "$out"
    exit 0
fi
mkdir -p target/tools
export GOFLAGS=-modcacherw
module=$(go mod download -json "github.com/seaweedfs/seaweedfs@$version" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r "$module/." "$scratch"
chmod -R u+w "$scratch"
(cd "$scratch" && go build -trimpath -ldflags="-s -w" -gcflags='all=-N -l' -o "$out.tmp" ./weed)
mv "$out.tmp" "$out"
echo "$out"
