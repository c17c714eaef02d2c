#!/usr/bin/env bash
# Builds the peers that benchmarks and tests run beside Cairn and that are
# neither in ../shared/peers/ nor in Debian at the versions wanted: vmagent
# and vmctl of VictoriaMetrics 1.150, from the Go module proxy, into
# target/tools/<name>-<version>, unless they are there already. Prints the
# path of each built binary, one a line.
#
#   scripts/build-peers.sh                # every peer
#   scripts/build-peers.sh vmagent        # only those named
set -euo pipefail
cd "$(dirname "$0")/.."

vm_version=v1.150.0
# Dependencies of the release that the Go module proxy does not serve, and
# the nearest version it does (a day apart, the same API).
vm_replacements=(
    github.com/prometheus/client_golang/exp=github.com/prometheus/client_golang/exp@v0.0.0-20260724065723-ecdb8254ba61
)
mkdir -p target/tools
export GOFLAGS=-modcacherw

build_vm_app() {
    local app=$1
    local out="$PWD/target/tools/$app-$vm_version"
    if [ ! -x "$out" ]; then
        local module
        module=$(go mod download -json "github.com/VictoriaMetrics/VictoriaMetrics@$vm_version" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
        # The module cache is read-only and the release's vendor/ is not in
        # the module: build in a copy, its dependencies from the proxy.
        local scratch
        scratch=$(mktemp -d)
        cp -r "$module/." "$scratch"
        chmod -R u+w "$scratch"
        for replacement in "${vm_replacements[@]}"; do
            (cd "$scratch" && go mod edit -replace "$replacement")
        done
        (cd "$scratch" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags="-s -w" -o "$out.tmp" "./app/$app")
        rm -rf "$scratch"
        mv "$out.tmp" "$out"
    fi
    echo "$out"
}

peers=("$@")
if [ ${#peers[@]} -eq 0 ]; then
    peers=(vmagent vmctl)
fi
for peer in "${peers[@]}"; do
    case "$peer" in
        vmagent | vmctl) build_vm_app "$peer" ;;
        *)
            echo "unknown peer $peer (known: vmagent vmctl)" >&2
            exit 2
            ;;
    esac
done
