"""Gate benchmarks: what lanes, a hot concurrency key and a rate meter cost a drain.

* ``lane_single``: one lane of ``lane_jobs`` zero-work jobs: strictly one at a time, so this is
  the per-job round trip of claim, run, settle and promotion.
* ``lanes_round_robin`` against ``unlaned``: the same number of jobs spread over ``lanes``
  lanes (enqueued round-robin, so every lane's members are far apart in the backlog) and with
  no lane at all. The aim: laned throughput at least 80% of unlaned.
* ``hot_key``: ``key_jobs`` jobs under one concurrency key (limit 1): one runs, the others
  bounce and come back, so this measures admission and bounce traffic.
* ``meter``: a backlog of about ``meter_seconds`` of work behind a 50/s meter; the sustained
  start rate (the starts after the burst, over the span from first to last start, read from
  the execution-started events) should be within 2% of 50/s.

``lanes_round_robin`` and ``unlaned`` runs alternate (laned, unlaned, laned, ...), so the two
see the same machine: this VM's speed drifts more between minutes than the gap measured.

Each run drains a fresh ledger with idle, registered worker processes, like the plain drain in
``anvil.measure``; rates come from the ledger's own instants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acta import Acta, JobRequest
from acta.model.codes import EventCode, JobStatus
from anvil.bench_app import METERED, NOOP
from anvil.measure import DRAIN_POLL, Measurement, Run, repeat
from anvil.workload import BenchError, Target, clock, fresh_ledger, instant, wait_for, workers

Backlog = Callable[[Acta], list[JobRequest]]
METER_BURST = 50  # what an idle 50/s meter admits at once


@dataclass(frozen=True)
class GatePlan:
    lane_jobs: int = 1_000
    lanes: int = 1_000
    laned_jobs: int = 5_000
    key_jobs: int = 300
    meter_seconds: float = 20.0
    processes: int = 2
    executors: int = 16


FULL_GATES = GatePlan()
QUICK_GATES = GatePlan(lane_jobs=100, lanes=100, laned_jobs=500, key_jobs=50, meter_seconds=3.0)


def _drain(target: Target, plan: GatePlan, name: str, backlog: Backlog, timeout: float) -> Run:
    """Drain the backlog ``backlog(app)`` of definition ``name``; the rate over the window from
    the first execution-started to the last settle, both read from the ledger."""
    with (
        fresh_ledger(target) as ledger,
        workers(
            ledger, plan.processes, executors=plan.executors, listen=True, poll=DRAIN_POLL
        ) as children,
    ):
        app = ledger.app()
        try:
            requests = backlog(app)
            committed = clock.monotonic()
            app.enqueue_batch(requests)
        finally:
            app.close()
        jobs = len(requests)
        remaining = (
            "SELECT count(*) FROM {runtime} r JOIN {definitions} d ON d.id = r.definition_id "
            f"WHERE d.name = '{name}' AND r.status < {int(JobStatus.SUCCEEDED)}"
        )
        wait_for(children, lambda: ledger.sql(remaining)[0][0] == 0, timeout, "draining")
        wall = clock.monotonic() - committed
        starts = [
            instant(at)
            for (at,) in ledger.sql(
                "SELECT e.at FROM {events} e JOIN {runtime} r ON r.job_id = e.job_id "
                "JOIN {definitions} d ON d.id = r.definition_id "
                f"WHERE e.code = {int(EventCode.EXECUTION_STARTED)} AND d.name = '{name}' "
                "ORDER BY e.at"
            )
        ]
        [(last_settle, done)] = ledger.sql(
            "SELECT max(r.updated_at), count(*) FROM {runtime} r "
            "JOIN {definitions} d ON d.id = r.definition_id "
            f"WHERE d.name = '{name}' AND r.status = {int(JobStatus.SUCCEEDED)}"
        )
        [(bounces,)] = ledger.sql(
            f"SELECT count(*) FROM {{events}} WHERE code = {int(EventCode.BOUNCED)}"
        )
    if done != jobs:
        raise BenchError(f"drain finished {done} jobs, expected {jobs}")
    window = (instant(last_settle) - starts[0]).total_seconds()
    out: Run = {
        "jobs_per_s": done / window,
        "window_s": window,
        "wall_s": wall,
        "jobs": done,
        "bounces_per_job": bounces / done,
    }
    if name == METERED:
        # The sustained rate: the starts after the idle meter's burst (one second's worth),
        # over the time from the first start to the last. A turn that comes back late is
        # started later, never lost, so the backlog as a whole drains at the meter's rate.
        span = (starts[-1] - starts[0]).total_seconds()
        out["starts_per_s"] = (len(starts) - METER_BURST) / span
        out["span_s"] = span
        first = starts[0].timestamp()
        out["first_second_starts"] = sum(1 for s in starts if s.timestamp() <= first + 1.0)
    return out


def _lane_single(plan: GatePlan) -> Backlog:
    return lambda app: [app.request(NOOP, i, lane="one") for i in range(plan.lane_jobs)]


def _round_robin(plan: GatePlan, laned: bool) -> Backlog:
    def backlog(app: Acta) -> list[JobRequest]:
        return [
            app.request(NOOP, i, lane=f"lane-{i % plan.lanes}") if laned else app.request(NOOP, i)
            for i in range(plan.laned_jobs)
        ]

    return backlog


def _hot_key(plan: GatePlan) -> Backlog:
    return lambda app: [app.request(NOOP, i, concurrency_key="hot") for i in range(plan.key_jobs)]


def _metered(plan: GatePlan) -> Backlog:
    # Enough for the burst, the measured window and a little more, so the meter never idles.
    jobs = int(50 * (plan.meter_seconds + 2))
    return lambda app: [app.request(METERED, i) for i in range(jobs)]


def measurements(target: Target, plan: GatePlan, warmups: int, runs: int) -> list[Measurement]:
    """Every gate benchmark on one provider."""
    cases: list[tuple[str, dict[str, Any], str, Backlog, str, float]] = [
        ("lane_single", {"jobs": plan.lane_jobs}, NOOP, _lane_single(plan), "jobs_per_s", 600),
        ("lanes_round_robin", {"jobs": plan.laned_jobs, "lanes": plan.lanes}, NOOP,
         _round_robin(plan, True), "jobs_per_s", 600),
        ("unlaned", {"jobs": plan.laned_jobs}, NOOP, _round_robin(plan, False), "jobs_per_s",
         600),
        ("hot_key", {"jobs": plan.key_jobs, "limit": 1}, NOOP, _hot_key(plan), "jobs_per_s",
         600),
        ("meter", {"rate": "50/s", "window_s": plan.meter_seconds}, METERED, _metered(plan),
         "starts_per_s", 120 + plan.meter_seconds * 2),
    ]  # fmt: skip
    out = []
    paired = {"lanes_round_robin", "unlaned"}
    for case, params, name, backlog, headline, timeout in cases:
        if case in paired:
            continue
        params = params | {"processes": plan.processes, "executors": plan.executors}
        unit = "starts/s" if headline == "starts_per_s" else "jobs/s"
        m = Measurement(f"gate_{case}", target.provider, params, unit, headline)
        run = lambda b=backlog, n=name, t=timeout: _drain(target, plan, n, b, t)  # noqa: E731
        out.append(repeat(m, run, warmups, runs))
    pairs = [c for c in cases if c[0] in paired]
    both = [
        Measurement(f"gate_{case}", target.provider, params | {"processes": plan.processes,
                    "executors": plan.executors}, "jobs/s", headline)
        for case, params, _, _, headline, _ in pairs
    ]  # fmt: skip
    for m in both:
        m.begin()
    for attempt in range(warmups + runs):
        for m, (_, _, name, backlog, _, timeout) in zip(both, pairs, strict=True):
            result = _drain(target, plan, name, backlog, timeout)
            (m.warmups if attempt < warmups else m.runs).append(result)
    for m in both:
        m.end()
    return out[:1] + both + out[1:]
