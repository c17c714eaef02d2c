#!/usr/bin/env bash
# The real components the tests start that Debian packages, installed in one
# apt-get run when any is missing, the OpenTelemetry SDK in a venv, and
# S3Proxy's released jar.
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
    # what runs and fetches S3Proxy, the S3 server of tests/object_store.rs
    # and of the cluster's and backups' tests
    "java default-jre-headless"
    "mvn maven"
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

# The OpenTelemetry Python SDK's OTLP/HTTP exporter is the real OTLP client of
# tests/otlp.rs (Debian packages none), pinned to the versions the test was
# written against.
otel_venv=target/otel-venv
if ! "$otel_venv/bin/python" -c 'import opentelemetry.exporter.otlp.proto.http' >/dev/null 2>&1; then
    python3 -m venv "$otel_venv"
    "$otel_venv/bin/pip" install -q \
        opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2
fi

# S3Proxy, the S3 server (its file-system store, every request's signature
# checked) of tests/common/s3proxy.rs: the release's self-contained jar from
# Maven's registry, at a pinned version.
s3proxy_version=3.0.0
s3proxy_jar=target/tools/s3proxy-$s3proxy_version.jar
if [ ! -f "$s3proxy_jar" ]; then
    mkdir -p target/tools
    # Maven prints colour codes even in batch mode: its output is shown only
    # when it fails.
    if ! mvn -q -B dependency:copy \
        -Dartifact="org.gaul:s3proxy:$s3proxy_version:jar:jar-with-dependencies" \
        -DoutputDirectory=target/tools >target/s3proxy-fetch.log 2>&1; then
        cat target/s3proxy-fetch.log
        exit 1
    fi
    mv "target/tools/s3proxy-$s3proxy_version-jar-with-dependencies.jar" "$s3proxy_jar"
fi

# scripts/test.sh prints this last line.
prometheus --version 2>&1 | head -n 1
