"""The benchmark harness (anvil/) works: its smallest pieces on SQLite, and the JSON it writes.

Tiny sizes and a fast poll keep this to a few seconds. Nothing here asserts a speed: a number
from a shared test machine means nothing, only the shape of the result is checked.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from anvil import report
from anvil.bench import Plan, run_provider
from anvil.gates import GatePlan
from anvil.workload import Target

TINY = Plan(
    single=20,
    batch_jobs=60,
    batch_per_call=25,
    drain_warmup_jobs=30,
    drain_seconds=0.01,
    drain_max_jobs=40,
    processes=(1,),
    executors=(4,),
    bell_samples=3,
    poll_samples=2,
    poll=0.05,
    profiles=("buffered", "direct"),
    other_profile_drains=((1, 4),),
    warmups=1,
    runs=1,
    gates=GatePlan(
        lane_jobs=8,
        lanes=4,
        laned_jobs=16,
        key_jobs=4,
        meter_seconds=0.2,
        processes=1,
        executors=4,
    ),
)


def test_quick_pieces_run_on_sqlite_and_write_a_well_formed_result(tmp_path: Path) -> None:
    measurements = run_provider(Target("sqlite", tmp_path), TINY)

    assert [(m.name, m.params.get("wake"), m.params.get("profile")) for m in measurements] == [
        ("enqueue_single", None, None),
        ("enqueue_batch", None, None),
        ("drain", None, "buffered"),
        ("drain", None, "direct"),
        ("pickup", "poll (0.05 s)", "buffered"),
        ("pickup", "in-process bell", "buffered"),
        ("pickup", "in-process bell", "direct"),
        ("gate_lane_single", None, None),
        ("gate_lanes_round_robin", None, None),
        ("gate_unlaned", None, None),
        ("gate_hot_key", None, None),
        ("gate_meter", None, None),
    ]
    drain = measurements[2]
    # Sized from the warm-up's rate, then clamped to the plan's bounds.
    assert drain.params == {"processes": 1, "executors": 4, "profile": "buffered", "jobs": 30}
    assert drain.runs[0]["jobs"] == 30

    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text(f"# results\n{report.INDEX_START}\n{report.INDEX_END}\nend\n")
    env = report.environment("pytest", None)
    load = {"before": [0.0, 0.0, 0.0], "after": [0.0, 0.0, 0.0], "wall_s": 1.0}
    method = {"warmups": 1, "runs": 1, "quick": True, "plan": asdict(TINY)}
    doc = report.document(env, measurements, load, method)
    json_path, md_path = report.write(doc, out, report.slug(env))
    report.index(out)

    loaded = json.loads(json_path.read_text())
    assert set(loaded) == {"environment", "method", "load", "measurements"}
    assert loaded["environment"]["machine"]["cores"] >= 1
    assert loaded["environment"]["sqlite"] and loaded["environment"]["postgres"] is None
    for m in loaded["measurements"]:
        assert m["provider"] == "sqlite"
        assert len(m["runs"]) == 1 and len(m["warmups"]) == 1
        headline = m["summary"][m["headline"]]
        assert set(headline) == {"median", "min", "max"}
        assert headline["min"] <= headline["median"] <= headline["max"]
        assert headline["median"] > 0
    pickups = [m for m in loaded["measurements"] if m["name"] == "pickup"]
    assert all(set(m["summary"]) >= {"p50_ms", "p95_ms", "p99_ms"} for m in pickups)

    page = md_path.read_text()
    assert "## SQLite" in page and "### Drain" in page and "### Pickup latency" in page
    assert "### Gates" in page and "of unlaned" in page
    assert f"[{md_path.stem}]({md_path.name})" in (out / "README.md").read_text()
