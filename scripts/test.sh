#!/usr/bin/env bash
# The whole test suite on a fresh machine (README.md's second command; CI
# runs it through .ci/run): installs what the tests need (idempotently),
# checks formatting and lints, then runs every test in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."

# Building needs protoc and protobuf's well-known types (etcd-client's build
# script compiles etcd's API); scripts/run.sh installs them the same way.
scripts/install-build-deps.sh

# The web UI's build output (crates/ui/dist) is committed so that building
# cairn needs no Node.js; it must be what its source builds to.
scripts/build-ui.sh --check

# What the tests start is installed while Rust compiles, which leaves a core
# idle in its serial stretches: Debian's packages and S3Proxy (mostly waiting
# on the network and the disk), and the peers built from source with Go,
# each at a pinned version and once per checkout, niced (with CI set, the
# tests that use them fail rather than skip when they are missing):
# kube-apiserver of tests/kubernetes_sd.rs and vmctl 1.150 of
# tests/vm_native_migration.rs, in the order the tests meet them. The Go
# build goes on beside the tests, which also leave a core idle: a test that
# needs a Go peer waits for its file in the directory $CAIRN_GO_PEERS_DONE,
# written once that peer is built ("ok") or has failed.
mkdir -p target
deps_log=target/test-deps.log
scripts/install-test-deps.sh >"$deps_log" 2>&1 &
deps_pid=$!
peers_log=target/go-peers.log
CAIRN_GO_PEERS_DONE=$PWD/target/go-peers.done
export CAIRN_GO_PEERS_DONE
rm -rf "$CAIRN_GO_PEERS_DONE"
mkdir -p "$CAIRN_GO_PEERS_DONE"
(
    start=$SECONDS
    failed=0
    for peer in kube-apiserver vmctl; do
        if nice -n 10 scripts/build-peers.sh "$peer"; then
            status=ok
        else
            status=failed
            failed=1
        fi
        # Renamed into place, so that a test never reads it half written.
        echo "$status" >"$CAIRN_GO_PEERS_DONE/$peer.tmp"
        mv "$CAIRN_GO_PEERS_DONE/$peer.tmp" "$CAIRN_GO_PEERS_DONE/$peer"
    done
    echo "Go peers: $((SECONDS - start))s"
    [ "$failed" = 0 ]
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
if ! wait "$deps_pid"; then
    cat "$deps_log"
    echo "installing what the tests need failed" >&2
    exit 1
fi
tail -n 1 "$deps_log"
echo "waited for Debian's packages and S3Proxy: $((SECONDS - start))s"

# The test binaries of the build above, each to run in its package's
# directory as cargo runs it. They are run here rather than by cargo, which
# holds the build directory for as long as its tests run, and which resolves
# other features (and builds again) when asked for fewer packages.
binaries=$(cargo test --workspace --release --no-run --message-format=json | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(os.path.dirname(m["manifest_path"]), m["executable"], sep="\t")
')

# Runs the test binaries given as "directory<TAB>executable" lines on stdin,
# with the arguments given; fails if any test failed.
run_binaries() {
    local status=0 dir exe
    while IFS=$'\t' read -r dir exe; do
        echo "     Running $exe"
        (cd "$dir" && "$exe" "$@" </dev/null) || status=1
    done
    return "$status"
}

# The end-to-end tests four at once: they mostly wait on the processes they
# start, about one core's worth of CPU with four running. The crates' own
# tests run beside them in the core left over; their output is shown once
# both are done, so that the two do not interleave.
start=$SECONDS
crates_log=target/crate-tests.log
grep -v '/e2e-[^/]*$' <<<"$binaries" | run_binaries >"$crates_log" 2>&1 &
crates_pid=$!
e2e_status=0
grep '/e2e-[^/]*$' <<<"$binaries" | run_binaries --test-threads 4 || e2e_status=$?
crates_status=0
wait "$crates_pid" || crates_status=$?
cat "$crates_log"
# Doc tests are compiled when they run; the crates have none so far.
doc_status=0
cargo test --workspace --release --doc || doc_status=$?
echo "test suite: $((SECONDS - start))s"
if [ "$e2e_status" != 0 ] || [ "$crates_status" != 0 ] || [ "$doc_status" != 0 ]; then
    echo "tests failed (exit status of the end-to-end tests $e2e_status, of the crates' tests $crates_status, of the doc tests $doc_status)" >&2
    exit 1
fi

if ! wait "$peers_pid"; then
    cat "$peers_log"
    echo "building the Go peers failed" >&2
    exit 1
fi
grep '^Go peers:' "$peers_log"
# On a CI machine nothing builds with Go again: its caches (gigabytes) would
# only crowd the disk. Not before the tests end: one builds its exporter
# with Go from the same module cache.
if [ -n "${CI:-}" ]; then
    go clean -cache -modcache
fi

# The PromQL conformance report against Prometheus' own test scripts
# (passed / failed / skipped per named feature), printed uncaptured; built
# with the workspace's features, so nothing is compiled again.
cargo test --release --workspace --test upstream -- --nocapture
