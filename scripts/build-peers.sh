#!/usr/bin/env bash
# Builds the peers that benchmarks and tests run beside Cairn and that are
# neither in ../shared/peers/ nor in Debian at the versions wanted: vmagent
# and vmctl of VictoriaMetrics 1.150 and kube-apiserver of Kubernetes 1.34,
# from the Go module proxy, into target/tools/<name>-<version>, unless they
# are there already. Prints the path of each built binary, one a line.
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

k8s_version=v1.34.4
# The staging modules (k8s.io/api, ...) are published with the same patch.
k8s_staging_version=v0.34.4
mkdir -p target/tools
export GOFLAGS=-modcacherw
# What only the tests run (vmctl, kube-apiserver) is compiled without the Go
# compiler's optimisations: a quarter less to build, and the tests need these
# peers correct, not fast. vmagent is a benchmark's peer and is optimised.
test_peer_gcflags='all=-N -l'

build_vm_app() {
    local app=$1
    local gcflags=$2
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
        (cd "$scratch" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags="-s -w" -gcflags="$gcflags" -o "$out.tmp" "./app/$app")
        rm -rf "$scratch"
        mv "$out.tmp" "$out"
    fi
    echo "$out"
}

build_kube_apiserver() {
    local out="$PWD/target/tools/kube-apiserver-$k8s_version"
    if [ ! -x "$out" ]; then
        local module
        module=$(go mod download -json "k8s.io/kubernetes@$k8s_version" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
        local scratch
        scratch=$(mktemp -d)
        cp -r "$module/." "$scratch"
        chmod -R u+w "$scratch"
        # go.mod points the staging modules at ./staging/, which the module
        # zip leaves out: take the published ones of the same patch instead.
        sed -i -E "s#^(\s*k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1 => \1 $k8s_staging_version#" "$scratch/go.mod"
        (cd "$scratch" && rm -f go.work go.work.sum && CGO_ENABLED=0 GOWORK=off go build -mod=mod -trimpath -gcflags="$test_peer_gcflags" \
            -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version" \
            -o "$out.tmp" ./cmd/kube-apiserver)
        rm -rf "$scratch"
        mv "$out.tmp" "$out"
    fi
    echo "$out"
}

peers=("$@")
if [ ${#peers[@]} -eq 0 ]; then
    peers=(vmagent vmctl kube-apiserver)
fi
for peer in "${peers[@]}"; do
    case "$peer" in
        vmagent) build_vm_app vmagent "" ;;
        vmctl) build_vm_app vmctl "$test_peer_gcflags" ;;
        kube-apiserver) build_kube_apiserver ;;
        *)
            echo "unknown peer $peer (known: vmagent vmctl kube-apiserver)" >&2
            exit 2
            ;;
    esac
done
