#!/usr/bin/env bash
# Builds the web UI (crates/ui/app, TypeScript) into crates/ui/dist, which is
# committed and embedded in the cairn binary: run it after changing the app.
# With --check, builds and fails if the committed dist/ differs from the
# build (the test suite runs that); without Node.js it says so and skips the
# check, since the committed build is what cairn embeds.
set -euo pipefail
cd "$(dirname "$0")/../crates/ui/app"

if ! command -v npm >/dev/null 2>&1; then
    if [ "${1:-}" = "--check" ]; then
        echo "SKIPPED: npm not installed; the web UI's committed build is not checked against its source"
        exit 0
    fi
    echo "npm is needed to build the web UI (Debian: apt-get install npm)" >&2
    exit 1
fi

npm ci --no-audit --no-fund --loglevel=error
npm run build --silent

if [ "${1:-}" = "--check" ]; then
    cd ..
    if [ -n "$(git status --porcelain -- dist)" ]; then
        git status --short -- dist
        echo "crates/ui/dist is not what crates/ui/app builds to: run scripts/build-ui.sh and commit dist/" >&2
        exit 1
    fi
    echo "web UI: the committed build matches its source"
fi
