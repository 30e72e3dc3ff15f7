"""The test host: the real runtime, driven one tick at a time on a manual clock.

``AsyncHost`` binds an application to a throwaway ledger and a ``ManualClock`` and offers:
``tick()`` (one claim plus one handler run), ``advance(duration)`` (moves time, heartbeating
the live workers at each interval it crosses), ``run_until_idle()`` (ticks, and jumps the clock
to the next due instant whenever nothing is claimable), extra peer workers, and ``kill``/
``pause``/``resume`` to test lease recovery without real waiting. ``run(ref)`` runs one chosen
job; schedules and periodic system jobs stay idle unless turned on (acta_testing.muting).
``Host`` is the sync twin: it runs the async host on an event-loop thread of its own while it
lives (acta_testing.portal), so a sync handler can call back into the host (kill its own
worker, advance time) while its tick is in flight.
"""

from __future__ import annotations

import asyncio
import functools
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from acta.app import Acta
from acta.clock import ManualClock
from acta.duration import parse_duration
from acta.ledger import read
from acta.model.rows import EventInfo, JobInfo
from acta.provider.protocol import Provider
from acta.provider.testing import kept_for_session
from acta.runtime.run import RunEnd
from acta.runtime.system_jobs import RECOVERY_JOB, SYSTEM_JOBS
from acta.runtime.worker import Worker
from acta_testing.isolation import marked_for_schedules
from acta_testing.muting import Skipping, due_by_hand, muted_ids, muted_names
from acta_testing.portal import HostError as HostError
from acta_testing.portal import Portal

DEFAULT_MAX_TICKS = 10_000
SYSTEM_RUNS_PER_TICK = 100


class TickOutcome(StrEnum):
    """What one tick (one claim and one run) did: nothing, or how the run ended."""

    NOTHING_CLAIMED = "nothing-claimed"
    COMPLETED = "completed"
    FAILED = "failed"
    REARMED = "rearmed"
    SUSPENDED = "suspended"
    """The handler parked its job on a durable wait (sleep, signal, children)."""
    RESCHEDULED = "rescheduled"
    """The handler asked to run again later (``Reschedule``)."""
    PAUSED = "paused"
    """The handler paused its job for an operator (``Pause``)."""
    BOUNCED = "bounced"
    """A gate (concurrency or rate) turned the job away before its handler ran."""
    CANCELLED = "cancelled"
    LEASE_LOST = "lease-lost"
    KILLED = "killed"
    LEFT_LEASED = "left-leased"
    """Shutdown could not hand the job back: its sync handler's thread was still running."""


class IdleRuns(int):
    """What ``run_until_idle`` ran: as an int, the handler runs of user jobs; ``system`` counts
    acta's own runs (recovery, and schedules' system jobs when on) apart."""

    user: int
    system: int

    def __new__(cls, user: int, system: int) -> IdleRuns:
        found = super().__new__(cls, user)
        found.user, found.system = user, system
        return found

    def __repr__(self) -> str:
        return f"IdleRuns(user={self.user}, system={self.system})"


class AsyncHost:
    """Drive ``app`` against ``provider`` on ``clock``; see the module docstring."""

    def __init__(
        self,
        app: Acta,
        provider: Provider,
        clock: ManualClock,
        *,
        schedules: bool | None = None,
        **worker_settings: Any,
    ) -> None:
        self.app = app
        self.provider = provider
        self.clock = clock
        self.schedules = marked_for_schedules() if schedules is None else schedules
        """Whether declared schedules and acta's periodic system jobs run: off unless the test
        is marked ``acta_schedules`` or says so (``schedules=True``, ``enable_schedules()``)."""
        self.system_runs = 0
        """How many of acta's own jobs the ticks ran (recovery, and more with schedules on)."""
        self._settings = worker_settings
        self._binding = app.bound(provider, clock)
        self._binding.__enter__()
        self.deployment = app.deployment()
        self._stopping: set[asyncio.Future[None]] = set()
        self.workers: list[Worker] = [self._new_worker()]
        self.closed = False

    def _new_worker(self, **settings: Any) -> Worker:
        # A settle the database refuses raises from tick() here instead of waiting on a clock
        # that only the (blocked) test could move; pass retry_settles=True to test the wait.
        return Worker(
            self.deployment,
            clock=self.clock,
            seed=len(getattr(self, "workers", ())),
            **{"retry_settles": False, **self._settings, **settings},
        )

    @property
    def worker(self) -> Worker:
        """The default worker, which ``tick()`` uses unless told otherwise."""
        return self.workers[0]

    def enable_schedules(self, on: bool = True) -> None:
        """Let declared schedules fire and acta's periodic system jobs (retention, alerts, the
        outbox relay) run, as in production; ``on=False`` mutes them again."""
        self.schedules = on

    async def add_worker(self, **settings: Any) -> Worker:
        """Start another peer worker on the same ledger (registered at once)."""
        worker = self._new_worker(**settings)
        self.workers.append(worker)
        await worker.ensure_registered()
        return worker

    # -- driving --------------------------------------------------------------------------

    async def tick(self, worker: Worker | None = None, *, job: Any = None) -> TickOutcome:
        """Claim at most one due job with ``worker`` (default: the first) and run it.

        Due system jobs (recovery) run first, as they would in production, and do not count:
        the outcome is that of the one user job run, or nothing-claimed. With ``job`` (a ref
        or its text) it runs that job and nothing else (``run``)."""
        chosen = worker or self.worker
        if not _live(chosen, paused_too=True):
            return TickOutcome.NOTHING_CLAIMED  # killed or stopped: it claims nothing more
        if job is not None:
            return await self._run_chosen(chosen, job)
        for _ in range(SYSTEM_RUNS_PER_TICK):
            ended, name = await self._run_one(chosen)
            await self._settled_stops()
            if ended is None or name is None:
                return TickOutcome.NOTHING_CLAIMED
            if name not in SYSTEM_JOBS:
                return TickOutcome(ended.value)
            self.system_runs += 1
        raise HostError(f"system jobs kept running for {SYSTEM_RUNS_PER_TICK} claims in one tick")

    async def run(self, ref: Any, worker: Worker | None = None) -> TickOutcome:
        """Run exactly the job ``ref`` (it must be ready and due), nothing before or after it:
        no other job, no system job, no schedule."""
        return await self.tick(worker, job=ref)

    async def _run_chosen(self, worker: Worker, ref: Any) -> TickOutcome:
        info = await self.app.get_async(ref)
        ended, _ = await self._execute_one(worker, info.job_id)
        await self._settled_stops()
        if ended is None:
            raise HostError(
                f"job {info.job_ref} ({info.name}) cannot run now: it is {info.status.label}, "
                f"due at {info.next_run_at:%Y-%m-%d %H:%M:%S}; run() takes a ready job that is "
                f"due (advance() the clock to it first)"
            )
        return TickOutcome(ended.value)

    async def _run_one(self, worker: Worker) -> tuple[RunEnd | None, str | None]:
        """``worker.run_one()``, with the slots of schedules and periodic system jobs left out
        while schedules are off (acta_testing.muting)."""
        registry = self.deployment.registry
        if self.schedules or not muted_names(registry):
            return await worker.run_one()
        await worker.ensure_registered()  # the definition ids are learnt here
        with Skipping(worker, muted_ids(worker, registry)):
            ended, name = await worker.run_one()
        if ended is not None:
            return ended, name
        # A job of a scheduled definition the test enqueued itself is not a firing: run it.
        scheduled = [n for n in muted_names(registry) if n in registry.handled()]
        rows = [
            (j.job_id, j.name, int(j.status), j.priority, j.next_run_at)
            for n in scheduled
            for j in await self.app.jobs_async(name=n, status="ready")
        ]
        found = due_by_hand(worker, registry, rows) if rows else None
        return (None, None) if found is None else await self._execute_one(worker, found)

    async def _execute_one(self, worker: Worker, job_id: int) -> tuple[RunEnd | None, str | None]:
        """Claim the job ``job_id`` by its id (if ready and due) and run it to its settlement,
        as ``Worker.run_one`` does with the job its claim picks."""
        if worker.killed or worker.free_executors() <= 0:
            return None, None
        run = await worker.claim_one(job_id)
        if run is None:
            return None, None
        run.urgent = True
        return await worker.execute(run), run.job.name

    async def _settled_stops(self) -> None:
        """Let a shutdown that a handler started (``stop`` from inside it) finish before the
        tick returns: the run is over, so the shutdown has nothing left to wait for, and a
        tick must leave the ledger as the step left it, however slow the machine."""
        if self._stopping:
            await asyncio.gather(*list(self._stopping), return_exceptions=True)

    async def advance(self, duration: str | float | timedelta) -> datetime:
        """Move the clock forward, heartbeating every live worker at each interval crossed."""
        step = parse_duration(duration, field="duration", allow_zero=True)
        await self._ensure_started()
        target = self.clock.now() + step
        for w in self.workers:
            if w.registered and _live(w):
                w.skip_idle_beats(target)  # an idle worker's last beat of the jump is enough
        while True:
            live = [w for w in self.workers if w.registered and _live(w)]
            due = [w.next_heartbeat for w in live]
            if not due or min(due) > target:
                break
            instant = max(min(due), self.clock.now())
            self.clock.set(instant)
            for w in live:
                await w.heartbeat_due(instant)
        self.clock.set(max(target, self.clock.now()))
        return self.clock.now()

    async def _ensure_started(self) -> None:
        for w in self.workers:
            if _live(w, paused_too=True):  # a stopped worker must not come back
                await w.ensure_registered()

    async def run_until_idle(
        self, worker: Worker | None = None, max_ticks: int = DEFAULT_MAX_TICKS
    ) -> IdleRuns:
        """Tick until no user job is ready, leased or due; returns the number of runs of user
        jobs (``IdleRuns``, an int; its ``system`` counts acta's own runs apart).

        Whenever nothing is claimable, time jumps to the next due instant (a retry, a delayed
        job, or the recovery slot when a dead worker still holds leases).
        """
        chosen = worker or self.worker
        await chosen.ensure_registered()
        runs, system = 0, self.system_runs
        for _ in range(max_ticks):
            outcome = await self.tick(chosen)
            if outcome is not TickOutcome.NOTHING_CLAIMED:
                runs += 1
                continue
            ns = chosen.namespace_id
            unfinished, next_due, next_lease = await self.deployment.ledger.run_async(
                functools.partial(read.pending_work, ns)
            )
            if unfinished == 0:
                return IdleRuns(runs, self.system_runs - system)
            now = self.clock.now()
            if next_due is not None and next_due > now:
                target = next_due
            elif next_due is not None or next_lease is not None:
                # Due but unclaimable here, or held by a silent worker: recovery must run.
                any_due = await self._next_due_claimable(ns, next_due)
                if any_due is None or any_due <= now:
                    raise HostError(
                        f"{unfinished} job(s) are due or leased but worker "
                        f"{chosen.incarnation} cannot claim them (no handler, or skipped)"
                    )
                target = any_due
            else:
                # Parked work (suspended, paused) does not move with time alone.
                return IdleRuns(runs, self.system_runs - system)
            await self.advance(target - now)
        raise HostError(f"run_until_idle did not settle within {max_ticks} ticks")

    async def _next_due_claimable(
        self, namespace_id: int, user_due: datetime | None
    ) -> datetime | None:
        """The earliest due instant of a job the host's ticks may claim: any ready job; while
        schedules are off, a user job (``user_due``) or the recovery slot, as the other slots
        are muted."""
        if self.schedules or not muted_names(self.deployment.registry):
            return await self.deployment.ledger.run_async(
                functools.partial(read.next_due, namespace_id)
            )
        found = await self.app.jobs_async(name=RECOVERY_JOB, include_system=True)
        instants = [i for i in [user_due, *(j.next_run_at for j in found)] if i is not None]
        return min(instants, default=None)

    # -- worker faults --------------------------------------------------------------------

    def kill(self, worker: Worker | None = None) -> None:
        """The worker's process dies now: it writes nothing more, its leases lapse."""
        (worker or self.worker).kill()

    async def stop(self, worker: Worker | None = None) -> None:
        """Shut the worker down gracefully (SIGTERM): it stops claiming, hands back any run
        still in flight (when called from inside a handler) and marks itself stopped.

        The shutdown runs as a task of its own: awaited from inside an async handler, the
        handler is cancelled by that very shutdown, and must not cancel the shutdown with it."""
        shutdown = asyncio.ensure_future((worker or self.worker).shutdown())
        self._stopping.add(shutdown)
        shutdown.add_done_callback(self._stopping.discard)
        await asyncio.shield(shutdown)

    def pause(self, worker: Worker | None = None) -> None:
        """Freeze the worker's heartbeats (SIGSTOP): its runs continue, its leases lapse."""
        (worker or self.worker).paused = True

    def resume(self, worker: Worker | None = None) -> None:
        """Let a paused worker heartbeat again (SIGCONT)."""
        (worker or self.worker).paused = False

    # -- ledger readers -------------------------------------------------------------------

    async def job(self, ref: Any) -> JobInfo:
        return await self.app.get_async(ref)

    async def jobs(self, **filters: Any) -> list[JobInfo]:
        return await self.app.jobs_async(**filters)

    async def events(self, ref: Any) -> list[EventInfo]:
        return await self.app.events_async(ref)

    async def event_names(self, ref: Any) -> list[str]:
        """The job's timeline as event names, for compact assertions."""
        return [e.code.label for e in await self.events(ref)]

    def release(self) -> None:
        """Unbind the application and stop the workers' thread pools (no await needed)."""
        if self.closed:
            return
        self.closed = True
        for w in self.workers:
            w.threads.shutdown(wait=False)
        self._binding.__exit__(None, None, None)

    async def aclose(self, *, keep_pools: bool = False) -> None:
        if self.closed:
            return
        if self._stopping:
            await asyncio.wait(set(self._stopping))
        self.release()
        if not keep_pools:
            # Server providers keep an async pool on this loop; release it while the loop
            # still runs (the provider reopens lazily if the ledger is used again).
            await self.provider.aclose()


def _live(worker: Worker, *, paused_too: bool = False) -> bool:
    """Whether ``worker`` still takes part: not killed, not stopped (a shutdown ends its
    claiming for good) and, unless ``paused_too``, not paused."""
    return not worker.killed and worker.claiming and (paused_too or not worker.paused)


class Host:
    """The sync test host: the same operations as AsyncHost, as plain calls."""

    def __init__(
        self,
        app: Acta,
        provider: Provider,
        clock: ManualClock,
        *,
        schedules: bool | None = None,
        **worker_settings: Any,
    ) -> None:
        worker_settings["schedules"] = schedules
        self._portal = Portal.take()
        self._host = self._portal.call(_make(app, provider, clock, worker_settings))
        self.app, self.provider, self.clock = app, provider, clock

    @property
    def worker(self) -> Worker:
        return self._host.worker

    @property
    def workers(self) -> list[Worker]:
        return self._host.workers

    def add_worker(self, **settings: Any) -> Worker:
        return self._portal.call(self._host.add_worker(**settings))

    @property
    def schedules(self) -> bool:
        return self._host.schedules

    @property
    def system_runs(self) -> int:
        return self._host.system_runs

    def enable_schedules(self, on: bool = True) -> None:
        self._host.enable_schedules(on)

    def tick(self, worker: Worker | None = None, *, job: Any = None) -> TickOutcome:
        return self._portal.call(self._host.tick(worker, job=job))

    def run(self, ref: Any, worker: Worker | None = None) -> TickOutcome:
        return self._portal.call(self._host.run(ref, worker))

    def advance(self, duration: str | float | timedelta) -> datetime:
        return self._portal.call(self._host.advance(duration))

    def run_until_idle(
        self, worker: Worker | None = None, max_ticks: int = DEFAULT_MAX_TICKS
    ) -> IdleRuns:
        return self._portal.call(self._host.run_until_idle(worker, max_ticks))

    def kill(self, worker: Worker | None = None) -> None:
        self._host.kill(worker)

    def stop(self, worker: Worker | None = None) -> None:
        self._portal.call(self._host.stop(worker))

    def pause(self, worker: Worker | None = None) -> None:
        self._host.pause(worker)

    def resume(self, worker: Worker | None = None) -> None:
        self._host.resume(worker)

    def job(self, ref: Any) -> JobInfo:
        return self.app.get(ref)

    def jobs(self, **filters: Any) -> list[JobInfo]:
        return self.app.jobs(**filters)

    def events(self, ref: Any) -> list[EventInfo]:
        return self.app.events(ref)

    def event_names(self, ref: Any) -> list[str]:
        return [e.code.label for e in self.events(ref)]

    def close(self) -> None:
        # A session provider's pools stay open on the kept loop for the schema's next test.
        self._portal.call(self._host.aclose(keep_pools=kept_for_session(self.provider)))
        self._portal.give_back()


async def _make(
    app: Acta, provider: Provider, clock: ManualClock, settings: dict[str, Any]
) -> AsyncHost:
    return AsyncHost(app, provider, clock, **settings)
