#!/usr/bin/env bash
# The cost of tenants and authentication on the write path (docs/benchmarks.md):
# `cairn bench run --backfill` into a fresh server per run, for each of the three
# kinds in turn: no header and no access control (plain), `--tenant team-a`
# (tenant), and the tenant with basic auth against a web configuration
# (tenant-auth; COLD=1 leaves the credential's one bcrypt check inside the run).
#   scripts/bench_write_auth.sh [RUNS]      (BIN=path/to/cairn, default target/release/cairn)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/cairn}
RUNS=${1:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A bcrypt (cost 10) hash of the password "pw": a benchmark fixture.
cat > "$work/web.yml" <<'YAML'
basic_auth_users:
  prom: '$2b$10$yIzVTqE.WO7M4IgPmvqf/OkVK4exhRtMrpLpvKabiQkipMUvticq.'
access:
  prom: {write: [team-a], read: [team-a]}
YAML

run() {
  local kind=$1 n=$2 port=$((19100 + RANDOM % 500))
  local dir="$work/data-$kind-$n"
  local args=(--storage.path "$dir" --http.listen-addr "127.0.0.1:$port" --log.level warn)
  local access=()
  case $kind in
    tenant) access=(--tenant team-a) ;;
    tenant-auth)
      args+=(--web.config.file "$work/web.yml")
      access=(--tenant team-a --basic-auth-user prom --basic-auth-password pw) ;;
  esac
  "$BIN" "${args[@]}" > "$dir.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/-/ready" > /dev/null && break; sleep 0.1; done
  if [ "$kind" = tenant-auth ] && [ -z "${COLD:-}" ]; then
    curl -sf -u prom:pw -H "X-Scope-OrgID: team-a" "http://127.0.0.1:$port/api/v1/labels" > /dev/null
  fi
  "$BIN" bench run --write-url "http://127.0.0.1:$port/api/v1/write" --targets 100 --backfill 3h \
    --no-queries --pid "$pid" --quiet --report-json "$work/report.json" "${access[@]}" > /dev/null
  kill "$pid"; wait "$pid" || true
  rm -rf "$dir"
  python3 -c "
import json; r = json.load(open('$work/report.json')); t = r['targets'][0] if 'targets' in r else r['target']
print('$kind', $n, r['samples_delivered'], 'samples,', round(t['cpu_seconds_per_million_samples'], 4), 'CPU s per million')"
}

for n in $(seq "$RUNS"); do
  for kind in plain tenant tenant-auth; do run "$kind" "$n"; done
done
