#!/usr/bin/env bash
# The real components the tests start that Debian packages, installed in one
# apt-get run when any is missing, and the OpenTelemetry SDK in a venv.
# Idempotent; scripts/test.sh runs it while Rust compiles. With CI set, each
# test that needs one of these fails rather than skips when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# A command the tests run, and the Debian package that has it:
wanted=(
    # the membership store of tests/cluster.rs
    "etcd etcd-server"
    # the remote-write client of tests/prometheus_remote_write.rs, and the
    # promtool of tests/vmctl.rs
    "prometheus prometheus"
    # the scrape target and notification receiver of
    # tests/scrape_differential.rs and tests/rules_differential.rs
    "prometheus-node-exporter prometheus-node-exporter"
    "prometheus-alertmanager prometheus-alertmanager"
    # the DNS server of tests/dns_sd.rs
    "dnsmasq dnsmasq-base"
    # the browser of the web UI's tests (tests/ui_browser.rs)
    "chromium chromium"
    "chromedriver chromium-driver"
    # the migration client of tests/vmctl.rs
    "vmctl victoria-metrics"
    # the Influx line-protocol client of tests/line_protocols.rs, and its
    # Graphite and OpenTSDB client
    "influx influxdb-client"
    "collectd collectd-core"
)

missing=()
for entry in "${wanted[@]}"; do
    read -r command package <<<"$entry"
    # Some live in sbin, which a non-root PATH may leave out.
    if ! command -v "$command" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$command" ]; then
        missing+=("$package")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
prometheus --version 2>&1 | head -n 1

# The OpenTelemetry Python SDK's OTLP/HTTP exporter is the real OTLP client of
# tests/otlp.rs (Debian packages none), pinned to the versions the test was
# written against.
otel_venv=target/otel-venv
if ! "$otel_venv/bin/python" -c 'import opentelemetry.exporter.otlp.proto.http' >/dev/null 2>&1; then
    python3 -m venv "$otel_venv"
    "$otel_venv/bin/pip" install -q \
        opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2
fi
