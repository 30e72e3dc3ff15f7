"""The peer benchmark's arithmetic: ratios oriented so that above 1 means acta is ahead, and
the aims table reading them. No peer is installed or run here (``nox -s bench-peers`` does)."""

from __future__ import annotations

from anvil.bench_peers import METRICS, aims, ratios


def _medians(rate: float, p50: float) -> dict[str, float]:
    out = {f"{name}.{key}": rate for name, key, _ in METRICS if not key.endswith("_ms")}
    return out | {f"{name}.{key}": p50 for name, key, _ in METRICS if key.endswith("_ms")}


def test_rates_divide_one_way_and_latencies_the_other() -> None:
    found = ratios({"acta-buffered": _medians(300.0, 2.0), "pgqueuer": _medians(200.0, 4.0)})
    row = found["acta-buffered vs pgqueuer"]
    assert row["drain_1.jobs_per_s"] == 1.5  # acta drains faster: above 1
    assert row["pickup.p50_ms"] == 2.0  # acta picks up in half the time: above 1 too


def test_the_aims_table_says_by_how_much_an_aim_is_missed() -> None:
    doc = {"ratios": ratios({"acta-buffered": _medians(150.0, 4.0),
                             "pgqueuer": _medians(200.0, 2.0)})}  # fmt: skip
    lines = aims(doc)
    drain = next(line for line in lines if "drain 1" in line)
    assert "0.75x" in drain and "no, 75% of the aim" in drain
    assert not any("procrastinate" in line for line in lines)  # not measured: not claimed
