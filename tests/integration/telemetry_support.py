"""The OpenTelemetry SDK wired to memory, for the telemetry tests: what acta recorded is read
back through the SDK's in-memory metric reader and span exporter."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from acta.telemetry import Telemetry

Points = dict[tuple[tuple[str, Any], ...], Any]


class Sdk:
    """An SDK wired to memory: what acta recorded is read back here."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer = self.tracer_provider.get_tracer("shop")

    def metrics(self) -> dict[str, Points]:
        """Every acta instrument's points, by name, then by attributes (sorted pairs)."""
        found: dict[str, Points] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                if scope.scope.name != "acta":
                    continue
                for metric in scope.metrics:
                    points = found.setdefault(metric.name, {})
                    for point in metric.data.data_points:
                        key = tuple(sorted(point.attributes.items()))
                        has_count = hasattr(point, "count")  # a histogram point
                        points[key] = (point.count, point.sum) if has_count else point.value
        return found

    def spans(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]

    def close(self) -> None:
        self.meter_provider.shutdown()
        self.tracer_provider.shutdown()


def job(name: str, **more: str) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted({"acta.namespace": "default", "acta.job.name": name, **more}.items()))


def telemetry_of(sdk: Sdk, *, backlog: bool = False) -> Telemetry:
    """A Telemetry recording on ``sdk``'s providers."""
    return Telemetry(
        meter_provider=sdk.meter_provider, tracer_provider=sdk.tracer_provider, backlog=backlog
    )
