"""Sends one export through the OpenTelemetry Python SDK's OTLP/HTTP exporter.

Used by tests/otlp.rs (otlp_python_sdk_exporter): a real OTLP client, since
Debian packages none. Usage: otlp_python_sdk.py <metrics endpoint URL>.
Exits 0 only if the exporter reports success.
"""

import sys

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExportResult,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics import Counter, Histogram, ObservableGauge, UpDownCounter
from opentelemetry.sdk.resources import Resource


class RecordingExporter(OTLPMetricExporter):
    """The SDK's exporter, remembering whether every export succeeded."""

    results = []

    def export(self, metrics_data, timeout_millis=10_000, **kwargs):
        result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        self.results.append(result)
        return result


def main(endpoint):
    cumulative = {
        kind: AggregationTemporality.CUMULATIVE
        for kind in (Counter, UpDownCounter, Histogram, ObservableGauge)
    }
    exporter = RecordingExporter(
        endpoint=endpoint,
        compression=Compression.Gzip,
        preferred_temporality=cumulative,
    )
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    resource = Resource.create(
        {
            "service.name": "pysvc",
            "service.instance.id": "inst-1",
            "deployment.environment": "test",
        }
    )
    provider = MeterProvider(resource=resource, metric_readers=[reader])
    meter = provider.get_meter("cairn.e2e", "1.0")

    requests = meter.create_counter("http.requests", unit="{request}", description="Requests served.")
    requests.add(5, {"http.method": "GET"})
    queue = meter.create_up_down_counter("queue.depth", unit="{item}")
    queue.add(3)
    queue.add(-1)
    duration = meter.create_histogram("request.duration", unit="s")
    duration.record(0.3)
    duration.record(7.0)
    meter.create_observable_gauge(
        "room.temperature", callbacks=[lambda options: [Observation(21.5, {"room": "lab"})]], unit="Cel"
    )

    provider.force_flush()
    provider.shutdown()
    ok = bool(exporter.results) and all(r == MetricExportResult.SUCCESS for r in exporter.results)
    print(f"exports: {exporter.results}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
