"""The peer benchmark: ``python -m anvil.bench_peers`` (what ``nox -s bench-peers`` runs).

acta (on its ``buffered``, ``direct`` and ``bulk`` profiles), pgqueuer and procrastinate on the same
PostgreSQL, measured the same way (``anvil.peers.base`` mirrors ``anvil.measure``): single
enqueue, batch enqueue, drain of a backlog with 1 and 2 worker processes, pickup latency into
an idle worker. Every job is zero-work. The systems take turns within each round (the order
rotates from round to round), so a slow minute on this shared machine hits all of them; each
number on the page is the median over the rounds. Results go to
``docs/benchmarks/<date>-peers-<machine>.{json,md}`` with ratios of acta to each peer.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from anvil import measure, pickup, report
from anvil.bench import DEFAULT_DSN, _check_postgres, _interruptible
from anvil.measure import loadavg, other_tests
from anvil.peers import base
from anvil.workload import Target, clock

ACTA_PROFILES = ("buffered", "direct", "bulk")
RETRIES = 5
RETRY_PAUSE = 10.0
PEERS = ("pgqueuer", "procrastinate")


@dataclass(frozen=True)
class PeerPlan:
    single: int = 1_000
    batch_jobs: int = 10_000
    per_call: int = 1_000
    drain_jobs: int = 10_000
    executors: int = 16
    pickup_samples: int = 100
    rounds: int = 2


FULL = PeerPlan()
QUICK = PeerPlan(single=100, batch_jobs=2_000, drain_jobs=1_000, pickup_samples=10, rounds=1)
METRICS = (
    ("enqueue_single", "jobs_per_s", "single enqueue, jobs/s"),
    ("enqueue_batch", "jobs_per_s", "batch enqueue, jobs/s"),
    ("drain_1", "jobs_per_s", "drain, 1 process, jobs/s"),
    ("drain_2", "jobs_per_s", "drain, 2 processes, jobs/s"),
    ("pickup", "p50_ms", "pickup p50, ms"),
    ("pickup", "p95_ms", "pickup p95, ms"),
    ("pickup", "p99_ms", "pickup p99, ms"),
)
Runner = Callable[[str], dict[str, float]]


def _peer(name: str) -> base.Peer:
    if name == "pgqueuer":
        from anvil.peers.pgqueuer_peer import PEER as pgq

        return pgq
    from anvil.peers.procrastinate_peer import PEER as pro

    return pro


def runners(system: str, plan: PeerPlan, dsn: str, workdir: Path) -> dict[str, Runner]:
    """What each measurement runs for one system (``acta-<profile>`` or a peer's name)."""
    n, ex = plan.drain_jobs, plan.executors
    if system.startswith("acta-"):
        profile = system.removeprefix("acta-")
        target = Target("postgres", workdir, dsn)
        return {
            "enqueue_single": lambda _: measure.enqueue_single(target, plan.single),
            "enqueue_batch": lambda _: measure.enqueue_batch(
                target, plan.batch_jobs, plan.per_call),
            "drain_1": lambda _: measure.drain(target, n, 1, ex, profile),
            "drain_2": lambda _: measure.drain(target, n, 2, ex, profile),
            "pickup": lambda _: pickup.pickup(target, plan.pickup_samples, listen=True,
                                              profile=profile),
        }  # fmt: skip
    peer = _peer(system)
    return {
        "enqueue_single": lambda _: base.enqueue_single(peer, dsn, plan.single),
        "enqueue_batch": lambda _: base.enqueue_batch(peer, dsn, plan.batch_jobs, plan.per_call),
        "drain_1": lambda _: base.drain(peer, dsn, n, 1, ex),
        "drain_2": lambda _: base.drain(peer, dsn, n, 2, ex),
        "pickup": lambda _: base.pickup(peer, dsn, plan.pickup_samples),
    }


def run(plan: PeerPlan, systems: list[str], dsn: str, workdir: Path) -> dict[str, Any]:
    """Every measurement of every system, ``plan.rounds`` times, the systems interleaved.

    Every run gets a fresh schema (and fresh worker processes), as in ``anvil.bench``; there
    are no warm-up runs, so each system's first pickups, which are slower for every queue,
    count in its percentiles alike."""
    table = {s: runners(s, plan, dsn, workdir) for s in systems}
    runs: dict[str, dict[str, list[dict[str, float]]]] = {s: {} for s in systems}
    rounds = []
    for r in range(plan.rounds):
        order = systems[r % len(systems) :] + systems[: r % len(systems)]
        begun = {"load": loadavg(), "others": other_tests(), "order": order}
        for name in ("enqueue_single", "enqueue_batch", "drain_1", "drain_2", "pickup"):
            for system in order:
                result, retries = _patiently(functools.partial(table[system][name], system))
                if retries:
                    result = result | {"retries": float(retries)}
                runs[system].setdefault(name, []).append(result)
                shown = ", ".join(f"{k}={v:,.2f}" for k, v in result.items())
                print(f"round {r + 1} {system:14} {name:15} {shown}", flush=True)
        rounds.append(begun | {"load_after": loadavg(), "others_after": other_tests()})
    medians = {
        s: {
            f"{name}.{key}": statistics.median(r[key] for r in runs[s][name])
            for name, key, _ in METRICS
        }
        for s in systems
    }
    return {"runs": runs, "rounds": rounds, "medians": medians}


def _patiently(run_once: Callable[[], dict[str, float]]) -> tuple[dict[str, float], int]:
    """Run once; when the server turned a connection away (a shared server at its connection
    limit), wait a little and run again from scratch, up to ``RETRIES`` times. The retries
    are recorded with the run."""
    for attempt in range(RETRIES + 1):
        try:
            return run_once(), attempt
        except Exception as exc:
            if attempt == RETRIES or not _turned_away(exc):
                raise
            print(f"connection refused ({str(exc).splitlines()[0][:80]}); again", flush=True)
            time.sleep(RETRY_PAUSE)
    raise AssertionError("unreachable")


def _turned_away(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if "too many clients" in str(seen) or "shutting down" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def ratios(medians: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """acta's median over each peer's, per metric, oriented so that > 1 means acta is better
    (rates: acta / peer; latencies: peer / acta)."""
    out: dict[str, dict[str, float]] = {}
    for system in (s for s in medians if s.startswith("acta-")):
        for peer in (p for p in medians if not p.startswith("acta-")):
            row = {}
            for name, key, _ in METRICS:
                k = f"{name}.{key}"
                a, p = medians[system][k], medians[peer][k]
                row[k] = (p / a if key.endswith("_ms") else a / p) if a and p else 0.0
            out[f"{system} vs {peer}"] = row
    return out


# The aims of issue 14 this page can check: (system, peer, metric, at least this ratio).
AIMS = (
    ("acta-buffered", "pgqueuer", "drain_1.jobs_per_s", 1.0),
    ("acta-direct", "procrastinate", "drain_1.jobs_per_s", 6.0),
    ("acta-buffered", "pgqueuer", "enqueue_single.jobs_per_s", 1.0),
    ("acta-buffered", "pgqueuer", "enqueue_batch.jobs_per_s", 1.5),
    ("acta-buffered", "pgqueuer", "pickup.p50_ms", 1.0),
    ("acta-bulk", "pgqueuer", "drain_1.jobs_per_s", 1.3),
    ("acta-bulk", "pgqueuer", "drain_2.jobs_per_s", 1.5),
)


def aims(doc: dict[str, Any]) -> list[str]:
    """The aims as a table: the ratio measured, and whether it is met."""
    lines = ["| aim | measured | met |", "|---|---|---|"]
    for system, peer, metric, want in AIMS:
        row = doc["ratios"].get(f"{system} vs {peer}")
        if row is None:
            continue
        got = row[metric]
        label = (
            f"{system.replace('-', ' ')} {metric.split('.')[0].replace('_', ' ')} "
            f">= {want:g}x {peer}"
        )
        verdict = "yes" if got >= want else f"no, {got / want:.0%} of the aim"
        lines.append(f"| {label} | {got:.2f}x | {verdict} |")
    return lines


def markdown(doc: dict[str, Any]) -> str:
    env, res = doc["environment"], doc["results"]
    systems = list(res["medians"])
    names = {s: (f"acta {s.removeprefix('acta-')}" if s.startswith("acta-")
                 else f"{s} {doc['versions'].get(s, '')}") for s in systems}  # fmt: skip
    lines = [
        f"# Peer benchmark, {env['date']}",
        "",
        "acta against pgqueuer and procrastinate on one PostgreSQL, zero-work jobs, the same",
        "method for all (see `anvil/bench_peers.py` and docs/benchmarks/README.md). Medians of",
        f"{doc['plan']['rounds']} interleaved rounds in one sitting.",
        "",
        "| | " + " | ".join(label for _, _, label in METRICS) + " |",
        "|---|" + "---|" * len(METRICS),
    ]
    for s in systems:
        cells = []
        for name, key, _ in METRICS:
            values = [r[key] for r in res["runs"][s][name]]
            med = res["medians"][s][f"{name}.{key}"]
            digits = 1 if key.endswith("_ms") else 0
            cells.append(f"{med:,.{digits}f} ({min(values):,.{digits}f}–{max(values):,.{digits}f})")
        lines.append(f"| {names[s]} | " + " | ".join(cells) + " |")
    lines += ["", "Ratios (acta over peer; above 1 means acta is ahead, for pickup too):", "",
              "| | " + " | ".join(label for _, _, label in METRICS) + " |",
              "|---|" + "---|" * len(METRICS)]  # fmt: skip
    for pair, row in doc["ratios"].items():
        lines.append(f"| {pair} | " + " | ".join(f"{v:.2f}x" for v in row.values()) + " |")
    lines += ["", "Aims of issue 14 (pickup: pgqueuer's p50 over acta's):", "", *aims(doc)]
    mach, pg = env["machine"], env["postgres"] or {}
    acta_env = env["acta"]
    lines += [
        "",
        "## Where and how",
        "",
        f"- Command: `{env['command']}`",
        f"- acta commit `{acta_env['commit'][:12]}`"
        + (
            f" (uncommitted: {', '.join(acta_env['uncommitted'])})"
            if acta_env["uncommitted"]
            else ""
        ),
        f"- Machine: {mach['cpu']}, {mach['cores']} cores, {mach['ram_gib']} GiB RAM; "
        f"{env['python']}; psycopg {env['psycopg']} ({env['psycopg_impl']})",
        f"- PostgreSQL: {pg.get('version', '?')}",
        "- Peers: " + ", ".join(f"{k} {v}" for k, v in doc["versions"].items()),
        f"- Sizes: single enqueue {doc['plan']['single']:,} calls; batch enqueue "
        f"{doc['plan']['batch_jobs']:,} jobs in calls of {doc['plan']['per_call']:,}; drains of "
        f"{doc['plan']['drain_jobs']:,} jobs, {doc['plan']['executors']} executors per process "
        "(pgqueuer: batch_size, procrastinate: concurrency); pickup "
        f"{doc['plan']['pickup_samples']} samples per run into one idle worker (4 executors), "
        "LISTEN/NOTIFY on",
        f"- Load average before/after: {doc['load']['before']} / {doc['load']['after']}; "
        f"wall time {doc['load']['wall_s']:.0f} s",
    ]
    for i, rnd in enumerate(res["rounds"]):
        others = len(rnd["others"]) + len(rnd["others_after"])
        lines.append(f"  - round {i + 1}: order {', '.join(rnd['order'])}; load {rnd['load']} -> "
                     f"{rnd['load_after']}; other test runners seen: {others}")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    _interruptible()
    parser = argparse.ArgumentParser(prog="python -m anvil.bench_peers", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--drain-jobs", type=int, help="jobs per drain (default 10,000)")
    parser.add_argument("--pickup-samples", type=int, help="samples per pickup run (100)")
    parser.add_argument("--dsn", default=os.environ.get("ACTA_BENCH_DSN") or DEFAULT_DSN)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    parser.add_argument(
        "--systems", default=",".join([f"acta-{p}" for p in ACTA_PROFILES] + list(PEERS))
    )
    args = parser.parse_args(args_list)
    plan = QUICK if args.quick else FULL
    if args.rounds:
        plan = replace(plan, rounds=args.rounds)
    if args.drain_jobs:
        plan = replace(plan, drain_jobs=args.drain_jobs)
    if args.pickup_samples:
        plan = replace(plan, pickup_samples=args.pickup_samples)
    systems = [s for s in args.systems.split(",") if s]
    _check_postgres(args.dsn)
    command = ("nox -s bench-peers" if os.environ.get("NOX_CURRENT_SESSION")
               else "python -m anvil.bench_peers")  # fmt: skip
    env = report.environment(
        command + (" -- " + " ".join(args_list) if args_list else ""), args.dsn
    )
    versions = {s: _peer(s).version() for s in systems if not s.startswith("acta-")}
    load: dict[str, Any] = {"before": loadavg()}
    started = clock.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="acta-peers-"))
    try:
        results = run(plan, systems, args.dsn, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load |= {"after": loadavg(), "wall_s": clock.monotonic() - started}
    doc = {"environment": env, "versions": versions, "plan": asdict(plan), "load": load,
           "results": results, "ratios": ratios(results["medians"])}  # fmt: skip
    name = report.slug(env).replace(env["date"], env["date"] + "-peers", 1)
    name += "-quick" if args.quick else ""
    report.save_page(doc, markdown(doc).split("\n")[:-1], args.out, name)  # markdown() ends in "\n"
    print(f"wrote {args.out / name}.json and {args.out / name}.md")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as stop:
        raise SystemExit(f"interrupted ({stop}); workers stopped, schemas dropped") from None
