#!/usr/bin/env bash
# Cluster overhead against a single node (docs/benchmarks.md, docs/cluster.md):
# the same live workload (`cairn bench run`: node_exporter targets in real time,
# the alert rules as instant queries and dashboard range queries) against
#   single      one cairn, no cluster mode
#   rf1         three cairn nodes, replication factor 1
#   rf3         three cairn nodes, replication factor 3
#   vm          VictoriaMetrics single-node (VM_BIN), the peer of the same run
# with writes and queries spread over the nodes, CPU and RSS summed over the
# processes and disk over their directories. All on this one machine, so
# three nodes share its cores: the figures are totals per sample, not speed-up.
#   scripts/bench_cluster.sh [TARGETS] [DURATION]
#   (BIN=target/release/cairn, VM_BIN=../shared/peers/victoria-metrics-1.150.0)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/cairn}
VM_BIN=${VM_BIN:-../shared/peers/victoria-metrics-1.150.0}
TARGETS=${1:-200}
DURATION=${2:-3m}
work=$(mktemp -d)
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
port() { echo $((20000 + RANDOM % 20000)); }
wait_ready() { for _ in $(seq 300); do curl -sf "$1/-/ready" > /dev/null && return; sleep 0.1; done; echo "not ready: $1" >&2; exit 1; }

etcd_port=$(port)
etcd --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$(port)" \
  > "$work/etcd.log" 2>&1 &
pids+=($!)
sleep 2

bench() {
  local name=$1 writes=$2 queries=$3 run_pids=$4 dirs=$5
  "$BIN" bench run --name "$name" --write-url "$writes" --query-url "$queries" --targets "$TARGETS" \
    --duration "$DURATION" --range-queries 1h --pid "$run_pids" --data-dir "$dirs" --quiet \
    --report-json "$work/$name.json" > "$work/$name.txt"
  python3 - "$work/$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["target"] or {}
q = r["query_latency_ms"]
mb = lambda b: (b or 0) / 1e6
print(f'{r["name"]:7} samples {r["samples_delivered"]:>9}  failed {r["samples_failed"]}  '
      f'cpu s/M {t.get("cpu_seconds_per_million_samples") or 0:6.2f} '
      f'(ingest {t.get("ingest_cpu_seconds_per_million_samples") or 0:5.2f})  '
      f'rss {mb(t.get("rss_peak_bytes")):7.1f} MB  disk B/sample {t.get("disk_bytes_per_sample") or 0:5.2f}  '
      f'query p50 {q["p50"]:6.1f} p99 {q["p99"]:7.1f} ms  query errors {r["query_errors"]}')
PY
}

cluster() {
  local name=$1 nodes=$2 rf=$3
  local writes=() queries=() node_pids=() dirs=()
  for i in $(seq "$nodes"); do
    local p; p=$(port)
    local args=(--storage.path "$work/$name-$i" --http.listen-addr "127.0.0.1:$p" --log.level warn)
    if [ "$nodes" -gt 1 ] || [ "$rf" -gt 0 ]; then
      args+=(--cluster.etcd-endpoints "http://127.0.0.1:$etcd_port" --cluster.name "$name"
             --cluster.node-id "$name-$i" --cluster.replication-factor "$rf")
    fi
    "$BIN" "${args[@]}" > "$work/$name-$i.log" 2>&1 &
    node_pids+=($!); pids+=($!)
    writes+=("http://127.0.0.1:$p/api/v1/write"); queries+=("http://127.0.0.1:$p"); dirs+=("$work/$name-$i")
  done
  for q in "${queries[@]}"; do wait_ready "$q"; done
  sleep 3
  bench "$name" "$(IFS=,; echo "${writes[*]}")" "$(IFS=,; echo "${queries[*]}")" \
    "$(IFS=,; echo "${node_pids[*]}")" "$(IFS=,; echo "${dirs[*]}")"
  kill "${node_pids[@]}"; wait "${node_pids[@]}" 2>/dev/null || true
}

cluster single 1 0
cluster rf1 3 1
cluster rf3 3 3

vm_port=$(port)
"$VM_BIN" -storageDataPath "$work/vm" -httpListenAddr "127.0.0.1:$vm_port" -loggerLevel ERROR > "$work/vm.log" 2>&1 &
vm_pid=$!; pids+=($vm_pid)
wait_ready "http://127.0.0.1:$vm_port"
bench vm "http://127.0.0.1:$vm_port/api/v1/write" "http://127.0.0.1:$vm_port" "$vm_pid" "$work/vm"
