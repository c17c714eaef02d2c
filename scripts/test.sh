#!/usr/bin/env bash
# The whole test suite on a fresh machine (README.md's second command; CI
# runs it through .ci/run): installs what the tests need (idempotently),
# checks formatting and lints, then runs every test in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."

# Building needs protoc and protobuf's well-known types (etcd-client's build
# script compiles etcd's API); scripts/run.sh installs them the same way.
scripts/install-build-deps.sh

# etcd (Debian's etcd-server) is the real membership store of tests/cluster.rs
# (with CI set, those tests fail rather than skip when it is missing).
if ! command -v etcd >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends etcd-server
fi

# Prometheus is the real remote-write client of tests/prometheus_remote_write.rs
# (with CI set, that test fails rather than skips when it is missing).
if ! command -v prometheus >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus
fi
prometheus --version 2>&1 | head -n 1

# node_exporter and Alertmanager (Debian's prometheus-node-exporter and
# prometheus-alertmanager) are the real scrape target and notification receiver
# of tests/scrape_differential.rs and tests/rules_differential.rs (with CI set,
# those tests fail rather than skip when they are missing).
if ! command -v prometheus-node-exporter >/dev/null 2>&1 || ! command -v prometheus-alertmanager >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus-node-exporter prometheus-alertmanager
fi

# dnsmasq (Debian's dnsmasq-base) is the real DNS server of tests/dns_sd.rs
# (with CI set, that test fails rather than skips when it is missing).
if ! command -v dnsmasq >/dev/null 2>&1 && [ ! -x /usr/sbin/dnsmasq ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends dnsmasq-base
fi

# Debian's Chromium and chromedriver run the web UI's browser tests
# (tests/ui_browser.rs; with CI set, they fail rather than skip when missing).
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium chromium-driver
fi

# The web UI's build output (crates/ui/dist) is committed so that building
# cairn needs no Node.js; it must be what its source builds to.
scripts/build-ui.sh --check

# vmctl (Debian's victoria-metrics package) is the real migration client of
# tests/vmctl.rs, which also needs promtool (prometheus package) and script(1);
# with CI set, that test fails rather than skips when they are missing.
if ! command -v vmctl >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends victoria-metrics
fi

# Debian's influx CLI (influxdb-client) is the real Influx line-protocol client
# of tests/line_protocols.rs; with CI set, that test fails rather than skips
# when it is missing.
# collectd (collectd-core) is the real Graphite and OpenTSDB client there.
if ! command -v influx >/dev/null 2>&1 || ! command -v collectd >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends influxdb-client collectd-core
fi

# The OpenTelemetry Python SDK's OTLP/HTTP exporter is the real OTLP client of
# tests/otlp.rs (Debian packages none; with CI set, that test fails rather than
# skips when it is missing). Pinned to the versions the test was written against.
otel_venv=target/otel-venv
if ! "$otel_venv/bin/python" -c 'import opentelemetry.exporter.otlp.proto.http' >/dev/null 2>&1; then
    python3 -m venv "$otel_venv"
    "$otel_venv/bin/pip" install -q \
        opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2
fi

# The peers built from source with Go, each at a pinned version and once per
# checkout (with CI set, the tests that use them fail rather than skip when
# they are missing): SeaweedFS, the S3 server of tests/object_store.rs;
# vmctl 1.150 of tests/vm_native_migration.rs; kube-apiserver of
# tests/kubernetes_sd.rs. They build in the background, niced, while Rust
# compiles, which leaves a core idle in its serial stretches.
peers_log=target/go-peers.log
mkdir -p target
(
    start=$SECONDS
    nice -n 10 scripts/build-seaweedfs.sh | tail -n 1 >target/go-peers.weed
    nice -n 10 scripts/build-peers.sh vmctl kube-apiserver >target/go-peers.list
    echo "Go peers: $((SECONDS - start))s"
    # On a CI machine nothing builds with Go again: its caches (gigabytes)
    # would only crowd the disk that the Rust test build links into.
    if [ -n "${CI:-}" ]; then
        go clean -cache -modcache
    fi
) >"$peers_log" 2>&1 &
peers_pid=$!

# The tests are built without debug information: it is most of every test
# binary's size, and a whole build of them would otherwise take gigabytes
# (a panic still names its file and line, a backtrace its functions).
export CARGO_PROFILE_RELEASE_DEBUG=false

start=$SECONDS
cargo fmt --all -- --check
# Linted in the release profile: the build scripts and proc macros that
# clippy compiles are then the ones the release test build below reuses
# (the dev profile would compile them again, optimised, for nothing).
cargo clippy --workspace --all-targets --release -- -D warnings
echo "fmt + clippy: $((SECONDS - start))s"

start=$SECONDS
cargo test --workspace --release --no-run
echo "test build: $((SECONDS - start))s"

start=$SECONDS
if ! wait "$peers_pid"; then
    cat "$peers_log"
    echo "building the Go peers failed" >&2
    exit 1
fi
tail -n 1 "$peers_log"
echo "waited for the Go peers: $((SECONDS - start))s"
CAIRN_WEED_BIN=$(cat target/go-peers.weed)
CAIRN_VMCTL_BIN=$(grep '/vmctl-' target/go-peers.list)
CAIRN_KUBE_APISERVER_BIN=$(grep '/kube-apiserver-' target/go-peers.list)
export CAIRN_WEED_BIN CAIRN_VMCTL_BIN CAIRN_KUBE_APISERVER_BIN

start=$SECONDS
cargo test --workspace --release --no-fail-fast
echo "test suite: $((SECONDS - start))s"

# The PromQL conformance report against Prometheus' own test scripts
# (passed / failed / skipped per named feature), printed uncaptured; built
# with the workspace's features, so nothing is compiled again.
cargo test --release --workspace --test upstream -- --nocapture
