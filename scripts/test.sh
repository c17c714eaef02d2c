#!/usr/bin/env bash
# The whole test suite on a fresh machine (README.md's second command; CI
# runs it through .ci/run): installs what the tests need (idempotently),
# checks formatting and lints, then runs every test in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."

# Prometheus is the real remote-write client of tests/prometheus_remote_write.rs
# (with CI set, that test fails rather than skips when it is missing).
if ! command -v prometheus >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus
fi
prometheus --version 2>&1 | head -n 1

start=$SECONDS
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
echo "fmt + clippy: $((SECONDS - start))s"

start=$SECONDS
cargo test --workspace --release
echo "test suite: $((SECONDS - start))s"

# The PromQL conformance report against Prometheus' own test scripts
# (passed / failed / skipped per named feature), printed uncaptured.
cargo test --release -p cairn-promqltest --test upstream -- --nocapture
