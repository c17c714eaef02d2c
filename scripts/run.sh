#!/usr/bin/env bash
# Builds and runs Cairn on a fresh machine (README.md's first command):
# installs the build's system dependencies if missing, then
# `cargo run --release -- <your flags>`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-build-deps.sh
exec cargo run --release -- "$@"
