#!/usr/bin/env bash
# What the compactor costs (docs/cluster.md, docs/benchmarks.md): a backfill
# (`cairn bench run --backfill`) into three cairn nodes at replication factor 3
# with a shared bucket (a directory), the days that are over uploaded by each
# node, then COMPACTORS compactors started (1 unless set), sharing the days:
# their CPU seconds per million samples kept, the time until every day is
# compacted, and the bucket's bytes before and after. The same backfill into
# VictoriaMetrics (VM_BIN) in the same run is the peer's ingestion cost.
# TENANTS spreads the cluster's targets over that many tenants: a tenant's day
# is the unit the compactors share.
#   scripts/bench_compactor.sh [TARGETS] [SPAN]
#   (BIN=target/release/cairn, VM_BIN=../shared/peers/victoria-metrics-1.150.0, COMPACTORS=1, TENANTS=1)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/cairn}
VM_BIN=${VM_BIN:-../shared/peers/victoria-metrics-1.150.0}
COMPACTORS=${COMPACTORS:-1}
TENANTS=${TENANTS:-1}
TARGETS=${1:-200}
SPAN=${2:-36h}
work=$(mktemp -d)
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
port() { echo $((20000 + RANDOM % 20000)); }
wait_ready() { for _ in $(seq 300); do curl -sf "$1/-/ready" > /dev/null && return; sleep 0.1; done; echo "not ready: $1" >&2; exit 1; }
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
bytes_under() { find "$1" -type f -name '*.cpart' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
parts_under() { find "$1" -type f -name '*.cpart' 2>/dev/null | wc -l; }

etcd_port=$(port)
etcd --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$(port)" \
  > "$work/etcd.log" 2>&1 &
pids+=($!)
sleep 2

common=(--cluster.etcd-endpoints "http://127.0.0.1:$etcd_port" --cluster.replication-factor 3
        --storage.object-store.url "file://$work/bucket" --storage.settle-time 5s
        --storage.object-store.refresh-interval 5s --cluster.compaction-interval 5s)
writes=() node_pids=() dirs=()
for i in 1 2 3; do
  p=$(port)
  "$BIN" "${common[@]}" --storage.path "$work/node-$i" --http.listen-addr "127.0.0.1:$p" \
    --cluster.node-id "node-$i" --log.level warn > "$work/node-$i.log" 2>&1 &
  node_pids+=($!); pids+=($!)
  writes+=("http://127.0.0.1:$p/api/v1/write"); dirs+=("$work/node-$i")
  wait_ready "http://127.0.0.1:$p"
done
sleep 3
"$BIN" bench run --name cluster --write-url "$(IFS=,; echo "${writes[*]}")" --targets "$TARGETS" \
  --tenants "$TENANTS" --backfill "$SPAN" --pid "$(IFS=,; echo "${node_pids[*]}")" --data-dir "$(IFS=,; echo "${dirs[*]}")" \
  --quiet --report-json "$work/cluster.json" > /dev/null

# Each node uploads the days that are over once they settle: wait until the
# count of their parts holds still.
last=-1
while :; do
  sleep 10
  now=$(parts_under "$work/bucket/nodes")
  [ "$now" -gt 0 ] && [ "$now" = "$last" ] && break
  last=$now
done
before=$(bytes_under "$work/bucket/nodes")

compactors=()
for i in $(seq "$COMPACTORS"); do
  p=$(port)
  "$BIN" "${common[@]}" --storage.path "$work/compactor-$i" --http.listen-addr "127.0.0.1:$p" \
    --cluster.node-id "compactor-$i" --cluster.role compact --log.level info > "$work/compactor-$i.log" 2>&1 &
  compactors+=($!); pids+=($!)
  wait_ready "http://127.0.0.1:$p"
done
started=$(date +%s.%N)
deadline=$((SECONDS + 3600))
while [ "$(parts_under "$work/bucket/nodes")" -gt 0 ] || [ "$(parts_under "$work/bucket/compactors")" -eq 0 ]; do
  [ "$SECONDS" -lt "$deadline" ] || { echo "not compacted within an hour; logs in $work" >&2; trap - EXIT; exit 1; }
  sleep 1
done
elapsed=$(echo "$(date +%s.%N) - $started" | bc)
cpu=0
for pid in "${compactors[@]}"; do cpu=$(echo "$cpu + $(cpu_seconds "$pid")" | bc); done
after=$(bytes_under "$work/bucket/compactors")
kept=$(cat "$work"/compactor-*.log | sed 's/\x1b\[[0-9;]*m//g' | grep 'compacted a day' | grep -o 'samples=[0-9]*' |
  awk -F= '{ s += $2 } END { print s + 0 }')
shares=$(for i in $(seq "$COMPACTORS"); do
  echo "compactor-$i $(grep -c 'compacted a day' "$work/compactor-$i.log" || true) days, $(cpu_seconds "${compactors[$((i - 1))]}") CPU s"
done | paste -sd ';' | sed 's/;/; /g')

vm_port=$(port)
"$VM_BIN" -storageDataPath "$work/vm" -httpListenAddr "127.0.0.1:$vm_port" -loggerLevel ERROR > "$work/vm.log" 2>&1 &
vm_pid=$!; pids+=($vm_pid)
wait_ready "http://127.0.0.1:$vm_port"
"$BIN" bench run --name vm --write-url "http://127.0.0.1:$vm_port/api/v1/write" --targets "$TARGETS" \
  --backfill "$SPAN" --pid "$vm_pid" --data-dir "$work/vm" --quiet --report-json "$work/vm.json" > /dev/null

python3 - "$work/cluster.json" "$work/vm.json" "$cpu" "$kept" "$before" "$after" "$elapsed" "$shares" <<'PY'
import json, sys
cluster, vm = (json.load(open(p)) for p in sys.argv[1:3])
cpu, kept, before, after, elapsed = (float(x) for x in sys.argv[3:8])
ingest = lambda r: (r["target"] or {}).get("cpu_seconds_per_million_samples") or 0
print(f"backfill: {cluster['samples_delivered']} samples; 3 nodes at RF 3 {ingest(cluster):.2f} CPU s/M, "
      f"VictoriaMetrics {ingest(vm):.2f} CPU s/M")
print(f"compactors: {kept:.0f} samples kept (read from 3 replicas) in {elapsed:.1f} s, {cpu:.2f} CPU s: "
      f"{cpu / kept * 1e6:.2f} CPU s per million samples kept")
print(f"tenants' days compacted: {sys.argv[8]}")
print(f"bucket parts: {before / 1e6:.1f} MB of replicas -> {after / 1e6:.1f} MB compacted ({before / after:.2f}x), "
      f"{after / kept:.3f} B per sample kept")
PY
