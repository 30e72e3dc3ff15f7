"""A worker: one process incarnation that claims and runs jobs of its application's namespace.

It is a set of loops on the tick scheduler: heartbeat (renew held leases, learn of lost ones and
cancel requests) and claim (lease due jobs for free executors, run each as a task). Production
calls ``serve``/``run_forever``; the test host calls ``run_one`` and ``beat`` itself. A worker
declared dead by recovery never writes again under that identity: it registers anew.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import socket
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from acta.clock import Clock
from acta.duration import parse_duration
from acta.errors import ValidationError
from acta.ids import JobRef, new_incarnation
from acta.ledger.claim import claim, start_many
from acta.ledger.transition import apply_transitions
from acta.ledger.worker import RECOVERY_JOB, heartbeat, register, stop
from acta.model.codes import EventCode, JobStatus, audited
from acta.model.rows import Claimed, Heartbeat, NewJob, Started, Transition, WorkerSpec
from acta.provider.verb import Verb
from acta.runtime.batcher import GroupCommit
from acta.runtime.bell import Bell
from acta.runtime.executor import execute
from acta.runtime.run import Run, Stop, TickOutcome
from acta.runtime.scheduler import Scheduler
from acta.runtime.slots import Slots
from acta.runtime.system_jobs import SystemJob, system_jobs

if TYPE_CHECKING:
    from acta.app import Acta

T = TypeVar("T")
log = logging.getLogger("acta.worker")

LEASE_BEATS = 4
# Both start what they claim for free executors in the claim's own commit; buffered also
# claims one batch ahead, started later as executors free up; direct claims only for free ones.
PROFILES = ("buffered", "direct")
DEAD_BEATS = 7


def _positive(value: Any, field: str, low: float, high: float) -> timedelta:
    td = parse_duration(value, field=field)
    if not low <= td.total_seconds() <= high:
        raise ValidationError(
            field, f"got {td.total_seconds():g} s", f"between {low:g} s and {high:g} s"
        )
    return td


def _host_name(host: object) -> str:
    """An explicit host label is shown to operators and stored: printable text, 1 to 100."""
    if not isinstance(host, str) or not 1 <= len(host) <= 100 or not host.isprintable():
        raise ValidationError("host", f"got {host!r:.80}", "1 to 100 printable characters")
    return host


class Worker:
    """Claims and runs the jobs of ``app.namespace`` with ``executors`` concurrent runs.

    ``heartbeat`` is the one liveness setting: the lease is four heartbeats and a worker silent
    for seven is dead, by construction, so peers that agree on it agree on everything.
    """

    def __init__(
        self,
        app: Acta,
        *,
        executors: int = 10,
        profile: str = "buffered",
        listen: bool = True,
        heartbeat: str | float | timedelta = 45,
        poll: str | float | timedelta = 1,
        shutdown_grace: str | float | timedelta = 30,
        clock: Clock | None = None,
        seed: int | None = None,
        host: str | None = None,
        retry_settles: bool = True,
    ) -> None:
        if (
            isinstance(executors, bool)
            or not isinstance(executors, int)
            or not 1 <= executors <= 1000
        ):
            raise ValidationError("executors", f"got {executors!r}", "an int from 1 to 1000")
        if profile not in PROFILES:
            raise ValidationError("profile", f"got {profile!r}", "'buffered' or 'direct'")
        self.profile = profile
        # Keep a finished run's outcome and retry its settle while the database is away
        # (production); the test hosts turn it off so a simulated outage raises from tick().
        self.retry_settles = bool(retry_settles)
        # Claimed-ahead runs: buffered workers keep up to one batch leased and waiting; direct
        # ones start what they claim, so they claim only for free executors.
        self.prefetch = executors if profile == "buffered" else 0
        self.app = app
        self.clock: Clock = clock or app.clock
        self.executors = executors
        self.heartbeat = _positive(heartbeat, "heartbeat", 0.05, 3600)
        self.lease = self.heartbeat * LEASE_BEATS
        self.dead_after = self.heartbeat * DEAD_BEATS
        self.poll = _positive(poll, "poll", 0.01, 600)
        self.shutdown_grace = parse_duration(
            shutdown_grace, field="shutdown_grace", allow_zero=True
        )
        self.host = _host_name(host) if host is not None else socket.gethostname()[:100]
        self.rng = random.Random(seed)
        self.threads = ThreadPoolExecutor(max_workers=executors, thread_name_prefix="acta-handler")
        self.runs: dict[int, Run] = {}
        self.slots = Slots(executors, on_free=self.wake)
        self._registering = asyncio.Lock()
        # Set when unfinished runs are given up (shutdown past its grace, or a kill): settles
        # waiting for the database to come back stop waiting.
        self.giving_up = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.tasks: set[asyncio.Task[TickOutcome]] = set()
        self.skipped: set[int] = set()
        self.killed = False
        self.paused = False
        self.incarnation = ""
        self.worker_id = 0
        self.namespace_id = 0
        self.recovery_job_id = 0
        self._system = system_jobs(app)
        self._definition_ids: dict[str, int] = {}
        self._startable: tuple[frozenset[int], frozenset[int]] | None = None
        self.bells: list[Bell] = []
        # Whether to use the database's bell (LISTEN/NOTIFY) when the provider has one; polling
        # stays the truth either way.
        self.listen = listen
        self.scheduler = Scheduler(self.clock)
        self._starts: GroupCommit[tuple[Claimed, bool], Started | None] = GroupCommit(
            self._start_batch
        )
        self._settles: GroupCommit[Transition, JobStatus | None] = GroupCommit(self._settle_batch)
        self._heartbeat_loop = self.scheduler.add("heartbeat", self._heartbeat_step)
        self._claim_loop = self.scheduler.add("claim", self._claim_step)

    # -- plumbing -------------------------------------------------------------------------

    def now(self) -> datetime | None:
        """The ``:now`` every statement of this worker binds."""
        return self.clock.sql_now()

    async def write(self, make: Callable[[], Verb[T]]) -> T:
        return await self.app.provider.run_async(make)

    async def start(self, job: Claimed, audit_started: bool) -> Started | None:
        """dispatched -> executing for one run, group-committed with other runs' starts."""
        return await self._starts.submit((job, audit_started))

    async def settle(self, plan: Transition) -> JobStatus | None:
        """Apply one run's final transition, group-committed with other runs' settles."""
        return await self._settles.submit(plan)

    async def _start_batch(self, items: Sequence[tuple[Claimed, bool]]) -> list[Started | None]:
        worker_id, now = self.worker_id, self.now()
        return await self.write(lambda: start_many(items, worker_id, now, self.fused))

    async def _settle_batch(self, plans: Sequence[Transition]) -> list[JobStatus | None]:
        now = self.now()
        return await self.write(lambda: apply_transitions(plans, now, self.fused))

    @property
    def fused(self) -> bool:
        """Whether the ledger runs whole batches as one statement (server dialects)."""
        return "fused" in self.app.provider.features

    def system_job(self, name: str) -> SystemJob | None:
        return self._system.get(name)

    def skip_definition(self, definition_id: int, name: str) -> None:
        """Stop claiming a definition this build has no handler for (a rolling deploy)."""
        if definition_id not in self.skipped:
            log.warning(
                "no handler for %r in this worker; handing it back and not claiming it again", name
            )
            self.skipped.add(definition_id)

    @property
    def registered(self) -> bool:
        return self.worker_id != 0

    async def register(self) -> None:
        """Register a new incarnation of this worker in the ledger."""
        self.incarnation = new_incarnation(self.host, os.getpid())
        specs = [d.spec() for d in self.app.definitions.values() if d.handler is not None]
        specs += [s.definition.spec() for s in self._system.values()]
        recovery_ref = str(JobRef.new(int(self.clock.now().timestamp() * 1000)))
        slot = NewJob(
            job_ref=recovery_ref,
            definition=RECOVERY_JOB,
            input_codec=1,
            input=b"null",
            priority=self._system[RECOVERY_JOB].definition.policy.priority,
            run_at=None,
            delay_ms=self.heartbeat // timedelta(milliseconds=1),
            dedup_key=RECOVERY_JOB,
            correlation_key=None,
            tags=(),
            audit_level=self._system[RECOVERY_JOB].definition.policy.audit,
        )
        spec = WorkerSpec(
            self.incarnation,
            self.host,
            os.getpid(),
            self.executors,
            self.heartbeat // timedelta(milliseconds=1),
        )
        namespace = self.app.namespace
        now = self.now()
        reg = await self.write(lambda: register(namespace, specs, spec, slot, now))
        self.worker_id, self.namespace_id = reg.worker_id, reg.namespace_id
        self._definition_ids, self._startable = dict(reg.definition_ids), None
        self.recovery_job_id = reg.recovery_job_id
        self._heartbeat_loop.due = self.clock.now() + self.heartbeat
        log.info("worker %s registered in namespace %r", self.incarnation, namespace)

    async def ensure_registered(self) -> None:
        # Two coroutines (a tick and a heartbeat, say) must not register two incarnations.
        async with self._registering:
            if not self.registered:
                await self.register()

    # -- claiming and running -------------------------------------------------------------

    async def claim(self, limit: int) -> list[Run]:
        """Lease up to ``limit`` due jobs; each becomes a Run this worker holds. As many as
        there are free executors start in the claim's own commit; the rest wait, dispatched,
        for an executor (and are started then)."""
        await self.ensure_registered()
        self._loop = loop = asyncio.get_running_loop()
        lease_ms = self.lease // timedelta(milliseconds=1)
        args = (self.worker_id, self.namespace_id, limit, frozenset(self.skipped), lease_ms)
        now, fused = self.now(), self.fused
        startable, quiet = self._claim_sets()
        start = min(limit, self.free_executors())
        pairs = await self.write(
            lambda: claim(
                *args, now, startable, quiet, start=start, fused=fused, held=frozenset(self.runs)
            )
        )
        runs = [Run(job, loop, started=started) for job, started in pairs]
        for run in runs:
            self.runs[run.job.job_id] = run
        return runs

    def _claim_sets(self) -> tuple[frozenset[int], frozenset[int]]:
        """Which definitions a claim may start at once, and which of those leave out the
        execution-started event (their audit level). Only definitions this build has a handler
        for and whose id it learnt at registration qualify; a job of any other definition is
        only leased, and the executor decides (start it, or hand it back for want of a
        handler) with the definition's live policy."""
        if self._startable is None:
            own = {name: s.definition for name, s in self._system.items()}
            own.update(
                (name, d) for name, d in self.app.definitions.items() if d.handler is not None
            )
            known = {name: d for name, d in own.items() if name in self._definition_ids}
            self._startable = (
                frozenset(self._definition_ids[name] for name in known),
                frozenset(
                    self._definition_ids[name]
                    for name, d in known.items()
                    if not audited(d.policy.audit, EventCode.EXECUTION_STARTED)
                ),
            )
        return self._startable

    async def execute(self, run: Run) -> TickOutcome:
        """Run one claimed job once an executor is free (buffered runs may wait here)."""
        try:
            await self.slots.take(run)
            return await execute(self, run)
        finally:
            self.slots.give_back(run)
            self.runs.pop(run.job.job_id, None)

    async def run_one(self) -> tuple[TickOutcome, str | None]:
        """Claim at most one job and run it to its settlement; returns the outcome and the
        job's name (None when nothing was claimed)."""
        if self.killed:
            return TickOutcome.KILLED, None
        if self.free_executors() <= 0:
            return TickOutcome.NOTHING_CLAIMED, None
        runs = await self.claim(1)
        if not runs:
            return TickOutcome.NOTHING_CLAIMED, None
        return await self.execute(runs[0]), runs[0].job.name

    async def _claim_step(self, now: datetime) -> datetime:
        # Buffered workers claim ahead (up to ``prefetch`` more than their executors), so the
        # next runs are leased and waiting while the current ones settle.
        free = self.free_executors() + self.prefetch
        if free <= 0 or self.killed:
            return now + self.poll
        runs = await self.claim(free)
        # Runs the claim already started take executors first; the dispatched ones queue.
        for run in sorted(runs, key=lambda r: r.started is None):
            task = asyncio.create_task(self.execute(run), name=f"acta-run-{run.job.job_ref}")
            self.tasks.add(task)
            task.add_done_callback(self._run_done)
        # A full batch suggests more is waiting: look again at once.
        return now if len(runs) == free else now + self.poll

    def _run_done(self, task: asyncio.Task[TickOutcome]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("acta run crashed", exc_info=task.exception())
        self.scheduler.ring(self._claim_loop)

    # -- heartbeat ------------------------------------------------------------------------

    async def beat(self) -> Heartbeat | None:
        """Heartbeat once: renew held leases, stop runs that lost theirs or must cancel."""
        if self.killed or self.paused or not self.registered:
            return None
        held = [(run.job.job_id, run.job.epoch) for run in self.runs.values()]
        args = (self.worker_id, self.namespace_id, held, self.lease // timedelta(milliseconds=1))
        recovery_id, now = self.recovery_job_id, self.now()
        result = await self.write(lambda: heartbeat(*args, recovery_id, now))
        if not result.alive:
            log.error(
                "worker %s was declared dead; stopping its runs and registering again",
                self.incarnation,
            )
            for run in list(self.runs.values()):
                run.stop(Stop.LEASE_LOST)
            self.worker_id = 0
            await self.register()
            return result
        for job_id in result.lost:
            if job_id in self.runs:
                self.runs[job_id].stop(Stop.LEASE_LOST)
        for job_id in result.cancel_requested:
            if job_id in self.runs:
                self.runs[job_id].stop(Stop.CANCEL)
        return result

    async def _heartbeat_step(self, now: datetime) -> datetime:
        await self.beat()
        return now + self.heartbeat

    # -- lifecycle ------------------------------------------------------------------------

    def free_executors(self) -> int:
        """Executors neither running a job nor stuck in an abandoned sync handler."""
        return self.slots.free(self.runs.values())

    def kill(self) -> None:
        """Behave as if the process died this instant: no write of any kind from now on."""
        self.killed = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.giving_up.set)
        for run in list(self.runs.values()):
            run.stop(Stop.KILLED)
        self.threads.shutdown(wait=False)

    async def serve(self, stopping: asyncio.Event) -> None:
        """Run until ``stopping`` is set, then shut down gracefully."""
        await self.ensure_registered()
        helpers = [asyncio.ensure_future(self._ring_on(stopping))]
        token = self.app.bell.subscribe(self.wake)
        provider = self.app.provider
        database_bell = provider.bell(self.app.namespace, self.clock) if self.listen else None
        if database_bell is not None:
            self.bells.append(database_bell)
        for bell in self.bells:
            helpers.append(asyncio.ensure_future(bell.run(self.wake)))
        try:
            await self.scheduler.run_until(stopping)
        finally:
            self.app.bell.unsubscribe(token)
            for helper in helpers:
                helper.cancel()
        await self.shutdown()

    def wake(self) -> None:
        """Work may be waiting: claim now instead of at the next poll (call on the loop)."""
        self.scheduler.ring(self._claim_loop)

    async def _ring_on(self, event: asyncio.Event) -> None:
        await event.wait()
        self.scheduler.ring()

    async def shutdown(self) -> None:
        """Stop claiming, let runs finish within the grace period, hand back the rest."""
        self._claim_loop.enabled = False
        deadline = self.clock.now() + self.shutdown_grace
        while self.tasks and self.clock.now() < deadline:
            self.scheduler.bell.clear()
            wake = min(await self.scheduler.run_due(), deadline)
            sleeper = asyncio.ensure_future(self.clock.sleep_until(wake, self.scheduler.bell))
            await asyncio.wait({sleeper, *self.tasks}, return_when=asyncio.FIRST_COMPLETED)
            sleeper.cancel()
        self.giving_up.set()
        for run in list(self.runs.values()):
            run.stop(Stop.SHUTDOWN)
        if self.tasks:
            await asyncio.wait(set(self.tasks))
        if self.registered and not self.killed:
            worker_id, namespace_id, now = self.worker_id, self.namespace_id, self.now()
            await self.write(lambda: stop(worker_id, namespace_id, now))
        self.threads.shutdown(wait=False)
        log.info("worker %s stopped", self.incarnation)

    def run_forever(self) -> None:
        """Serve in the foreground until SIGINT or SIGTERM (blocking)."""

        async def main() -> None:
            stopping = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stopping.set)
            await self.serve(stopping)
            await self.app.provider.aclose()

        asyncio.run(main())
