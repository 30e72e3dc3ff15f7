"""Pickup latency: from the start of an enqueue call to the start of the job's handler.

An idle, warm worker waits in another process. The bench enqueues one job, reads the instant
the handler printed when it started, waits until the job is settled, pauses, and repeats. Both
instants come from the OS wall clock of this one machine (``SystemClock.now()``), so their
difference is a true cross-process latency.

The pause before each enqueue matters when the worker finds work by polling: right after a
run the worker looks once more and then sleeps for ``poll``, so enqueuing at once would always
land at the same phase of its poll. The pauses are therefore spread evenly over one poll period
(stratified, then shuffled), which makes the samples those of a producer arriving at random.
With a bell (LISTEN/NOTIFY, or the in-process bell) the phase does not matter and the pause is
a short random one that lets the worker go idle.

``pickup_in_process`` measures the other SQLite case: producer and worker in one process and
one event loop, woken by the in-process bell.
"""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

from acta.model.codes import JobStatus
from anvil.bench_app import DEFAULT_PROFILE, PICKUP, PICKUP_MARK
from anvil.workload import Child, Ledger, Target, clock, fresh_ledger, pause, wait_for, workers

Run = dict[str, float]
SETTLE_STEP = 0.002  # how often to look whether the sampled job is settled


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_stats(samples: list[tuple[float, float]]) -> Run:
    """Percentiles of (pickup, enqueue call) pairs in ms; the enqueue call's own duration is
    the part of the pickup the producer spends before the job is even committed."""
    latencies = [pickup for pickup, _ in samples]
    calls = [call for _, call in samples]
    return {
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "mean_ms": sum(latencies) / len(latencies),
        "min_ms": min(latencies),
        "max_ms": max(latencies),
        "enqueue_call_p50_ms": percentile(calls, 50),
        "samples": len(latencies),
    }


def pauses(samples: int, by_poll: bool, poll: float, rng: random.Random) -> list[float]:
    """The pause before each enqueue, in seconds."""
    if by_poll:
        spread = [(i + rng.random()) / samples * poll for i in range(samples)]
        rng.shuffle(spread)
        return spread
    return [0.005 + 0.010 * rng.random() for _ in range(samples)]


def _status(ledger: Ledger, ref: str) -> int:
    rows = ledger.sql(
        "SELECT r.status FROM {runtime} r JOIN {jobs} j ON j.id = r.job_id "
        f"WHERE j.job_ref = '{ref}'"
    )
    return int(rows[0][0]) if rows else 0


def pickup(
    target: Target,
    samples: int,
    *,
    listen: bool,
    poll: float = 1.0,
    profile: str = DEFAULT_PROFILE,
    seed: int = 7,
) -> Run:
    """``samples`` enqueue-to-start latencies into one idle worker process.

    ``listen`` asks for the database bell; on SQLite there is none, so pickup is by poll."""
    rng = random.Random(seed)
    by_poll = not (listen and target.provider == "postgres")
    with (
        fresh_ledger(target) as ledger,
        workers(ledger, 1, executors=4, listen=listen, poll=poll, profile=profile) as children,
    ):
        app = ledger.app()
        started: dict[int, float] = {}

        def on_line(child: Child, line: str) -> None:
            if line.startswith(PICKUP_MARK):
                _, n, instant = line.split()
                started[int(n)] = float(instant)

        def one(n: int) -> tuple[float, float]:
            begun = clock.now()
            ref = str(app.enqueue(PICKUP, n))
            call = (clock.now() - begun).total_seconds() * 1000
            wait_for(
                children,
                lambda: n in started,
                30 + 2 * poll,
                "for a pickup",
                step=poll,
                on_line=on_line,
            )
            wait_for(
                children,
                lambda: _status(ledger, ref) >= JobStatus.SUCCEEDED,
                30,
                "for a settle",
                step=SETTLE_STEP,
            )
            return (started[n] - begun.timestamp()) * 1000, call

        try:
            one(-1)  # the producer's pool and definition ids: not a sample
            latencies = []
            for n, gap in enumerate(pauses(samples, by_poll, poll, rng)):
                pause(children, gap)
                latencies.append(one(n))
        finally:
            app.close()
        for child in children:
            child.lines.clear()
    return latency_stats(latencies)


async def _in_process(
    ledger: Ledger, samples: int, rng: random.Random, profile: str
) -> list[tuple[float, float]]:
    loop = asyncio.get_running_loop()
    waiting: dict[int, asyncio.Future[float]] = {}

    def report(n: int, instant: float) -> None:
        future = waiting.get(n)
        if future is not None and not future.done():
            future.set_result(instant)

    app = ledger.app(report)
    worker = app.worker(executors=4, **({} if profile == DEFAULT_PROFILE else {"profile": profile}))
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))

    async def one(n: int) -> tuple[float, float]:
        waiting[n] = loop.create_future()
        begun = clock.now()
        ref = await app.enqueue_async(PICKUP, n)
        call = (clock.now() - begun).total_seconds() * 1000
        instant = await asyncio.wait_for(waiting[n], 30)
        while not (await app.get_async(ref)).status.terminal:
            await clock.sleep_until(clock.now() + timedelta(seconds=SETTLE_STEP))
        return (instant - begun.timestamp()) * 1000, call

    try:
        while not worker.registered:
            await clock.sleep_until(clock.now() + timedelta(milliseconds=5))
        await one(-1)
        latencies = []
        for n, gap in enumerate(pauses(samples, False, 0, rng)):
            await clock.sleep_until(clock.now() + timedelta(seconds=gap))
            latencies.append(await one(n))
    finally:
        stopping.set()
        await serving
        await app.provider.aclose()
        app.close()
    return latencies


def pickup_in_process(
    target: Target, samples: int, profile: str = DEFAULT_PROFILE, seed: int = 7
) -> Run:
    """Producer and worker in one process: the in-process bell wakes the worker."""
    with fresh_ledger(target) as ledger:
        latencies = asyncio.run(_in_process(ledger, samples, random.Random(seed), profile))
    return latency_stats(latencies)
