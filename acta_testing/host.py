"""The test host: the real runtime, driven one tick at a time on a manual clock.

``AsyncHost`` binds an application to a throwaway ledger and a ``ManualClock`` and offers:
``tick()`` (one claim plus one handler run), ``advance(duration)`` (moves time, heartbeating
the live workers at each interval it crosses), ``run_until_idle()`` (ticks, and jumps the clock
to the next due instant whenever nothing is claimable), extra peer workers, and ``kill``/
``pause``/``resume`` to test lease recovery without real waiting. ``Host`` is the sync twin: it
runs the async host on a private event-loop thread, so a sync handler can call back into the
host (kill its own worker, advance time) while its tick is in flight.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Coroutine
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypeVar

from acta.app import Acta
from acta.clock import ManualClock
from acta.duration import parse_duration
from acta.ledger import read
from acta.model.rows import EventInfo, JobInfo
from acta.provider.protocol import Provider
from acta.runtime.system_jobs import SYSTEM_JOBS
from acta.runtime.worker import Worker

T = TypeVar("T")
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


class HostError(AssertionError):
    """The host could not do what the test asked (stuck work, too many ticks)."""


class AsyncHost:
    """Drive ``app`` against ``provider`` on ``clock``; see the module docstring."""

    def __init__(
        self, app: Acta, provider: Provider, clock: ManualClock, **worker_settings: Any
    ) -> None:
        self.app = app
        self.provider = provider
        self.clock = clock
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

    async def add_worker(self, **settings: Any) -> Worker:
        """Start another peer worker on the same ledger (registered at once)."""
        worker = self._new_worker(**settings)
        self.workers.append(worker)
        await worker.ensure_registered()
        return worker

    # -- driving --------------------------------------------------------------------------

    async def tick(self, worker: Worker | None = None) -> TickOutcome:
        """Claim at most one due job with ``worker`` (default: the first) and run it.

        Due system jobs (recovery) run first, as they would in production, and do not count:
        the outcome is that of the one user job run, or nothing-claimed."""
        chosen = worker or self.worker
        if not _live(chosen, paused_too=True):
            return TickOutcome.NOTHING_CLAIMED  # killed or stopped: it claims nothing more
        for _ in range(SYSTEM_RUNS_PER_TICK):
            ended, name = await chosen.run_one()
            await self._settled_stops()
            if ended is None or name is None:
                return TickOutcome.NOTHING_CLAIMED
            if name not in SYSTEM_JOBS:
                return TickOutcome(ended.value)
        raise HostError(f"system jobs kept running for {SYSTEM_RUNS_PER_TICK} claims in one tick")

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
    ) -> int:
        """Tick until no user job is ready, leased or due; returns the number of runs.

        Whenever nothing is claimable, time jumps to the next due instant (a retry, a delayed
        job, or the recovery slot when a dead worker still holds leases).
        """
        chosen = worker or self.worker
        await chosen.ensure_registered()
        runs = 0
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
                return runs
            now = self.clock.now()
            if next_due is not None and next_due > now:
                target = next_due
            elif next_due is not None or next_lease is not None:
                # Due but unclaimable here, or held by a silent worker: recovery must run.
                any_due = await self.deployment.ledger.run_async(
                    functools.partial(read.next_due, ns)
                )
                if any_due is None or any_due <= now:
                    raise HostError(
                        f"{unfinished} job(s) are due or leased but worker "
                        f"{chosen.incarnation} cannot claim them (no handler, or skipped)"
                    )
                target = any_due
            else:
                return runs  # parked work (suspended, paused) does not move with time alone
            await self.advance(target - now)
        raise HostError(f"run_until_idle did not settle within {max_ticks} ticks")

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

    async def aclose(self) -> None:
        if self.closed:
            return
        if self._stopping:
            await asyncio.wait(set(self._stopping))
        self.release()
        # Server providers keep an async pool on this loop; release it while the loop still
        # runs (the provider reopens lazily if the ledger is used again).
        await self.provider.aclose()


def _live(worker: Worker, *, paused_too: bool = False) -> bool:
    """Whether ``worker`` still takes part: not killed, not stopped (a shutdown ends its
    claiming for good) and, unless ``paused_too``, not paused."""
    return not worker.killed and worker.claiming and (paused_too or not worker.paused)


class Portal:
    """An event loop on its own thread, so sync code can call async code and be called back."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="acta-test-host", daemon=True
        )
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self.thread:
            coro.close()
            raise HostError(
                "the sync test host was called from an async handler; use the async host "
                "(acta_async_host) when handlers are async and call back into the host"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        # Tasks still on the loop (a sleeper's waiters a shutdown cancelled, say) get to finish
        # their cancellation first: a loop closed under a pending task logs "Task was
        # destroyed but it is pending!" when the task is collected.
        asyncio.run_coroutine_threadsafe(_settle_tasks(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class Host:
    """The sync test host: the same operations as AsyncHost, as plain calls."""

    def __init__(
        self, app: Acta, provider: Provider, clock: ManualClock, **worker_settings: Any
    ) -> None:
        self._portal = Portal()
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

    def tick(self, worker: Worker | None = None) -> TickOutcome:
        return self._portal.call(self._host.tick(worker))

    def advance(self, duration: str | float | timedelta) -> datetime:
        return self._portal.call(self._host.advance(duration))

    def run_until_idle(
        self, worker: Worker | None = None, max_ticks: int = DEFAULT_MAX_TICKS
    ) -> int:
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
        self._portal.call(self._host.aclose())
        self._portal.close()


async def _settle_tasks() -> None:
    """Cancel every other task on the running loop and wait until each has finished."""
    for _ in range(10):  # a cancelled task may start another on its way out
        current = asyncio.current_task()
        others = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if not others:
            return
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)


async def _make(
    app: Acta, provider: Provider, clock: ManualClock, settings: dict[str, Any]
) -> AsyncHost:
    return AsyncHost(app, provider, clock, **settings)
