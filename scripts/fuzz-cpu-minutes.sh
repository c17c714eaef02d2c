#!/bin/bash
# Fuzzes each target named on stdin (one per line, optionally followed by
# its own number of seconds) for CPU_SECONDS of the fuzzer's own CPU time
# (default 1200), JOBS at a time (default 2), at
# nice 19, so that a run shares a busy machine fairly and a paused one
# (SIGSTOP) loses nothing, if resumed within libFuzzer's per-input timeout
# (1200 s of wall clock: a longer pause ends the run with a false
# `timeout-…` artifact). libFuzzer's -max_total_time counts the wall clock.
# Needs the fuzz binaries: (cd fuzz && cargo +nightly fuzz build -s none).
# Logs go to $LOGS/<target>.log (default target/fuzz-logs); each finished
# target is appended to $LOGS/done.txt with its CPU seconds.
#   printf 'tsdb_part\nremote_write 600\n' | scripts/fuzz-cpu-minutes.sh
set -eu
cd "$(dirname "$0")/../fuzz"
export CPU_SECONDS=${CPU_SECONDS:-1200}
export LOGS=${LOGS:-$PWD/../target/fuzz-logs}
mkdir -p "$LOGS"
run_one() {
  local t=$1 secs=${2:-$CPU_SECONDS} bin=target/x86_64-unknown-linux-gnu/release/$1 tck cpu=0
  mkdir -p "artifacts/$t" "corpus/$t"
  nice -n 19 "$bin" -artifact_prefix="artifacts/$t/" -rss_limit_mb=2048 -print_final_stats=1 "corpus/$t" > "$LOGS/$t.log" 2>&1 &
  local pid=$!
  tck=$(getconf CLK_TCK)
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    read -r -a st < "/proc/$pid/stat" 2>/dev/null || break
    cpu=$(( (st[13] + st[14]) / tck ))
    if [ "$cpu" -ge "$secs" ]; then kill -INT "$pid"; fi
  done
  wait "$pid" || true
  echo "$t cpu_seconds=$cpu" >> "$LOGS/done.txt"
}
export -f run_one
xargs -P "${JOBS:-2}" -I{} bash -c 'run_one {}'
