"""A worker: one process incarnation that claims and runs jobs of one namespace.

The worker is a composition root. It is built from a ``Deployment`` (never from the
application) and wires small parts together: the claimer (leases due jobs), the heartbeat
(renews held leases, learns of lost ones and cancel requests), the committer (group-commits
starts and settles) and the run environment each run gets. Its loops run on the tick
scheduler: production calls ``serve``/``run_forever``; the test host calls ``run_one`` and
``heartbeat_due`` itself. A worker declared dead never writes again under that identity: it
registers anew.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import logging
import random
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, Protocol

from acta.bell import Bell
from acta.clock import Clock
from acta.errors import DatabaseUnavailableError
from acta.ledger.incarnation import stop
from acta.ledger.policy_override import overrides_of
from acta.model.rows import Heartbeat
from acta.runtime.claimer import Claimer
from acta.runtime.committer import Committer
from acta.runtime.deployment import Deployment
from acta.runtime.environment import CANCEL_GRACE, RunEnv
from acta.runtime.execution import execute
from acta.runtime.heartbeat import Heartbeats
from acta.runtime.identity import Identity
from acta.runtime.registration import registration_verb
from acta.runtime.run import Run, RunEnd, Stop
from acta.runtime.scheduler import Scheduler, failure, until
from acta.runtime.settings import WorkerSettings
from acta.runtime.slots import Slots
from acta.runtime.system_jobs import SYSTEM_JOBS

log = logging.getLogger("acta.worker")
_MS = timedelta(milliseconds=1)
# Registering while the database is away is tried again, backing off up to this.
STARTUP_RETRY_FIRST = timedelta(milliseconds=500)
STARTUP_RETRY_MAX = timedelta(seconds=10)


class HasDeployment(Protocol):
    """Anything that can say what a worker is built from (an ``Acta`` application)."""

    def deployment(self) -> Deployment: ...


class Worker:
    """Claims and runs the jobs of one namespace with ``executors`` concurrent runs.

    ``heartbeat`` is the one liveness setting: the lease is four heartbeats and a worker silent
    for seven is dead. ``clock`` overrides the deployment's (both the instants the worker
    reasons with and the ``:now`` it binds). Other settings: ``WorkerSettings``.
    """

    def __init__(
        self,
        deployment: Deployment | HasDeployment,
        *,
        clock: Clock | None = None,
        seed: int | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(deployment, Deployment):
            deployment = deployment.deployment()
        self.settings = WorkerSettings.build(**settings)
        ledger = deployment.ledger if clock is None else deployment.ledger.with_clock(clock)
        self.deployment = deployment
        self.ledger = ledger
        self.clock: Clock = ledger.clock
        self.namespace = deployment.namespace
        self.identity = Identity()
        self.runs: dict[int, Run] = {}
        self._comebacks: list[datetime] = []
        """Instants jobs this worker bounced are due again (a heap; past ones are dropped)."""
        self.tasks: set[asyncio.Task[RunEnd]] = set()
        self.bells: list[Bell] = []
        self.paused = False
        executors = self.settings.executors
        self.threads = ThreadPoolExecutor(max_workers=executors, thread_name_prefix="acta-handler")
        self.slots = Slots(executors, on_free=self.wake)
        self.env = RunEnv(
            ledger=ledger,
            registry=deployment.registry,
            clock=self.clock,
            identity=self.identity,
            committer=Committer(
                ledger,
                self.identity,
                self.settings,
                halted=lambda: self.env.killed,
                ready=deployment.bell.ring_all,
            ),
            slots=self.slots,
            threads=self.threads,
            rng=random.Random(seed),
            heartbeat=self.settings.heartbeat,
            retry_settles=self.settings.retry_settles,
            namespace=self.namespace,
            ring=deployment.bell.ring_all,
            outbox=deployment.outbox,
            settings=self.settings,
        )
        self.claimer = Claimer(
            ledger, deployment.registry, self.identity, self.lease, self.env.skipped
        )
        self.heartbeats = Heartbeats(
            ledger, self.identity, self.lease, self.runs, self.register, self.env.use_overrides
        )
        self._registering = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.scheduler = Scheduler(self.clock)
        self._heartbeat_loop = self.scheduler.add("heartbeat", self._heartbeat_step)
        self._claim_loop = self.scheduler.add("claim", self._claim_step)

    # -- settings and identity ------------------------------------------------------------

    @property
    def executors(self) -> int:
        return self.settings.executors

    @property
    def profile(self) -> str:
        return self.settings.profile

    @property
    def heartbeat(self) -> timedelta:
        return self.settings.heartbeat

    @property
    def lease(self) -> timedelta:
        return self.settings.lease

    @property
    def dead_after(self) -> timedelta:
        return self.settings.dead_after

    @property
    def poll(self) -> timedelta:
        return self.settings.poll

    @property
    def shutdown_grace(self) -> timedelta:
        return self.settings.shutdown_grace

    @property
    def host(self) -> str:
        return self.settings.host

    @property
    def incarnation(self) -> str:
        return self.identity.incarnation

    @property
    def worker_id(self) -> int:
        return self.identity.worker_id

    @property
    def namespace_id(self) -> int:
        return self.identity.namespace_id

    @property
    def registered(self) -> bool:
        return self.identity.registered

    @property
    def killed(self) -> bool:
        return self.env.killed

    @property
    def skipped(self) -> set[int]:
        """Definitions this worker hands back for want of a handler, never claimed again."""
        return self.env.skipped

    def now(self) -> datetime | None:
        """The ``:now`` every statement of this worker binds (None: the database clock)."""
        return self.ledger.now()

    # -- what the test host and specs may watch and drive ---------------------------------

    @property
    def claiming(self) -> bool:
        """False once shutdown began: the worker claims nothing more."""
        return self._claim_loop.enabled

    @property
    def next_claim(self) -> datetime:
        """When the claim loop looks for work next (now, when woken)."""
        return self._claim_loop.due

    @property
    def next_heartbeat(self) -> datetime:
        return self._heartbeat_loop.due

    def skip_idle_beats(self, until: datetime) -> None:
        """Move the next heartbeat to the last one due at or before ``until`` (test host).

        A heartbeat renews held leases and proves the worker alive; a worker that holds no run
        while the clock jumps needs only its last beat of the jump for both, so the host skips
        the ones in between (a year of a daily schedule stays milliseconds)."""
        due = self._heartbeat_loop.due
        if self.runs or due >= until:
            return
        self._heartbeat_loop.due = due + ((until - due) // self.heartbeat) * self.heartbeat

    async def heartbeat_due(self, instant: datetime) -> Heartbeat | None:
        """Beat if the heartbeat is due at ``instant`` (the next one is then one interval
        later); None when it was not due or the worker cannot beat (killed, paused)."""
        if self._heartbeat_loop.due > instant:
            return None
        self._heartbeat_loop.due = instant + self.heartbeat
        return await self.beat()

    # -- registration ---------------------------------------------------------------------

    async def register(self) -> None:
        """Register a new incarnation of this worker in the ledger."""
        me, ledger = self.identity, self.ledger
        make = registration_verb(me, self.deployment, self.settings, self.env)
        registration = await ledger.run_async(make, name="register")
        for drift in registration.drifts:
            log.warning("contract drift: %s", drift)
        self.claimer.learn(me.registered_as(registration))
        namespace_id = me.namespace_id
        overrides = await ledger.run_async(lambda: overrides_of(namespace_id), name="read")
        self.env.use_overrides(overrides)
        self._heartbeat_loop.due = self.clock.now() + self.heartbeat
        log.info("worker %s registered in namespace %r", me.incarnation, self.namespace)

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
        self._loop = asyncio.get_running_loop()
        # Bulk starts everything it claims in the claim's commit (a crash then charges an
        # attempt to the jobs claimed ahead too: documented); the others only what can run now.
        start = limit if self.profile == "bulk" else min(limit, self.free_executors())
        runs = await self.claimer.claim(limit, start, frozenset(self.runs))
        for run in runs:
            self.runs[run.job.job_id] = run
        if self.ledger.telemetry is not None:
            names = (r.job.name for r in runs if r.job.name not in SYSTEM_JOBS)
            self.ledger.telemetry.claimed(self.namespace, names)
        return runs

    async def claim_one(self, job_id: int) -> Run | None:
        """Lease one given job if it is ready and due (``acta jobs debug``); None otherwise."""
        await self.ensure_registered()
        self._loop = asyncio.get_running_loop()
        run = await self.claimer.claim_one(job_id)
        if run is not None:
            self.runs[job_id] = run
        return run

    async def execute(self, run: Run) -> RunEnd:
        """Run one claimed job once an executor is free (buffered runs may wait here).
        acta's system jobs take no executor: they must never wait behind user work."""
        try:
            if run.job.name not in SYSTEM_JOBS:
                await self.slots.take(run)
                if self.ledger.telemetry is not None:  # its span, its counts (acta.telemetry)
                    go = functools.partial(execute, self.env, run)
                    return await self.ledger.telemetry.execution(
                        self.namespace, run.job, self.clock, go
                    )
            return await execute(self.env, run)
        finally:
            self.slots.give_back(run)
            self.runs.pop(run.job.job_id, None)
            if run.back_at is not None:
                heapq.heappush(self._comebacks, run.back_at)

    async def run_one(self) -> tuple[RunEnd | None, str | None]:
        """Claim at most one job and run it to its settlement; returns how it ended and the
        job's name (None, None when nothing was claimed)."""
        if self.killed or self.free_executors() <= 0:
            return None, None
        runs = await self.claim(1)
        if not runs:
            return None, None
        runs[0].urgent = True  # one run, then its outcome: a bulk window would only delay it
        return await self.execute(runs[0]), runs[0].job.name

    def _spawn(self, run: Run) -> None:
        task = asyncio.create_task(self.execute(run), name=f"acta-run-{run.job.job_ref}")
        self.tasks.add(task)
        task.add_done_callback(self._run_done)

    async def _claim_step(self, now: datetime) -> datetime:
        if self.killed:
            return now + self.poll
        free = self._room()
        if free <= 0:
            return now + self.poll  # busy: the heartbeat still takes a due recovery
        runs = await self.claim(free)
        # Runs the claim already started take executors first; the dispatched ones queue.
        for run in sorted(runs, key=lambda r: r.started is None):
            self._spawn(run)
        # A full batch suggests more is waiting: look again at once.
        if len(runs) == free:
            return now
        # A job a gate turned away is due again at a known instant: look for it then rather
        # than at the next poll (another worker may take it: that is fine, it is looked for).
        comebacks = self._comebacks
        while comebacks and comebacks[0] <= now:
            heapq.heappop(comebacks)
        return min(now + self.poll, comebacks[0]) if comebacks else now + self.poll

    def _run_done(self, task: asyncio.Task[RunEnd]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("acta run crashed", exc_info=task.exception())
        self.scheduler.ring(self._claim_loop)

    # -- heartbeat ------------------------------------------------------------------------

    async def beat(self) -> Heartbeat | None:
        """Heartbeat once: renew held leases, stop runs that lost theirs or must cancel."""
        if self.killed or self.paused or not self.registered:
            return None
        return await self.heartbeats.beat()

    async def _heartbeat_step(self, now: datetime) -> datetime:
        await self.beat()
        if not self.killed and self._room() <= 0:
            # A worker this busy claims nothing, yet recovery must never wait behind user
            # work: take a due recovery slot by its id (it runs without an executor). Once per
            # heartbeat, recovery's own cadence, so a busy fleet adds one query per beat.
            system = await self.claimer.claim_system()
            if system is not None:
                self.runs[system.job.job_id] = system
                self._spawn(system)
        return now + self.heartbeat

    # -- lifecycle ------------------------------------------------------------------------

    def free_executors(self) -> int:
        """Executors neither running a job nor stuck in an abandoned sync handler (a bulk run
        whose settle waits for its flush window holds none)."""
        return self.slots.free([run for run in self.runs.values() if not run.settling])

    def _room(self) -> int:
        """How many jobs the next claim may take. Buffered and bulk workers claim ahead (up to
        ``prefetch`` more than their executors), so the next runs are leased and waiting while
        the current ones settle. Bulk claims only once a whole batch fits: fewer, larger
        claims."""
        room = self.free_executors() + self.settings.prefetch
        if self.profile == "bulk" and room < self.executors:
            return 0
        return room

    def flush(self) -> None:
        """Commit the settles waiting in the bulk flush window now (call on the loop)."""
        self.env.committer.flush()

    def kill(self) -> None:
        """Behave as if the process died this instant: no write of any kind from now on."""
        self.env.killed = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.env.giving_up.set)
            # The open flush window is lost, as in a crash: its waiting runs learn it now.
            self._loop.call_soon_threadsafe(self.env.committer.flush)
        for run in list(self.runs.values()):
            run.stop(Stop.KILLED)
        self.threads.shutdown(wait=False)

    async def serve(self, stopping: asyncio.Event) -> None:
        """Run until ``stopping`` is set, then shut down gracefully (within the grace)."""
        self._loop = asyncio.get_running_loop()
        if not await self._start_up(stopping):
            self.threads.shutdown(wait=False)
            log.info("worker stopped before it could register")
            return
        helpers = [asyncio.ensure_future(self._ring_on(stopping))]
        token = self.deployment.bell.subscribe(self.wake)
        database_bell = self.ledger.bell(self.namespace) if self.settings.listen else None
        if database_bell is not None:
            self.bells.append(database_bell)
        wire = self.deployment.bell.wire  # rung by acta itself (Redis): any provider
        if wire is not None:
            self.bells.append(wire.listener(self.clock))
        for bell in self.bells:
            helpers.append(asyncio.ensure_future(bell.run(self.wake)))
        loops = asyncio.ensure_future(self.scheduler.run_until(stopping))
        deadline: datetime | None = None
        try:
            await asyncio.wait({loops, helpers[0]}, return_when=asyncio.FIRST_COMPLETED)
            deadline = self.clock.now() + self.shutdown_grace
            # A step in flight (a claim waiting for the database) may finish within the grace.
            await until(self.clock, deadline, {loops})
        finally:
            loops.cancel()
            self.deployment.bell.unsubscribe(token)
            for helper in helpers:
                helper.cancel()
        await self.shutdown(deadline)

    async def _start_up(self, stopping: asyncio.Event) -> bool:
        """Register, trying again with backoff while the database is away; False if told to
        stop first."""
        wait = STARTUP_RETRY_FIRST
        while not stopping.is_set():
            try:
                await self.ensure_registered()
                return True
            except DatabaseUnavailableError as exc:
                log.warning("cannot register (%s); trying again in %g s", exc, wait.total_seconds())
                await self.clock.sleep_until(self.clock.now() + wait, stopping)
                wait = min(wait * 2, STARTUP_RETRY_MAX)
        return False

    def wake(self) -> None:
        """Work may be waiting: claim now instead of at the next poll (call on the loop)."""
        self.scheduler.ring(self._claim_loop)

    async def _ring_on(self, event: asyncio.Event) -> None:
        await event.wait()
        self.scheduler.ring()

    async def shutdown(self, deadline: datetime | None = None) -> None:
        """Stop claiming, let runs finish until ``deadline`` (now plus the grace by default),
        hand back the rest and mark this incarnation stopped. Bounded: a database that is away
        costs at most one more cancel grace; unfinished jobs are left for recovery."""
        self._claim_loop.enabled = False
        self.env.committer.drain()  # a graceful stop commits every finished run's settle
        if deadline is None:
            deadline = self.clock.now() + self.shutdown_grace
        beating = asyncio.ensure_future(self._beatuntil(deadline))
        try:
            await until(self.clock, deadline, self.tasks)
        finally:
            beating.cancel()
        self.env.giving_up.set()
        for run in list(self.runs.values()):
            run.stop(Stop.SHUTDOWN)
        # Each stopped run gets its cancel grace; this waits a little longer than that so a
        # run can hand its job back before anything is cancelled.
        await until(self.clock, self.clock.now() + 2 * CANCEL_GRACE, self.tasks)
        for task in list(self.tasks):
            task.cancel()  # still waiting on the database: its job is left for recovery
        if self.registered and not self.killed:
            me, ledger = self.identity, self.ledger
            write = asyncio.ensure_future(
                ledger.run_async(
                    lambda: stop(me.worker_id, me.namespace_id, ledger.now()), name="stop"
                )
            )
            await until(self.clock, self.clock.now() + CANCEL_GRACE, {write})
            why = failure(write)
            if why is not None:
                log.warning(
                    "worker %s could not record its stop (%s); recovery declares it dead after "
                    "%g s",
                    me.incarnation,
                    why,
                    self.dead_after.total_seconds(),
                )
        self.threads.shutdown(wait=False)
        log.info("worker %s stopped", self.incarnation)

    async def _beatuntil(self, deadline: datetime) -> None:
        """Keep the held leases alive while runs finish within the grace."""
        while True:
            due = self._heartbeat_loop.due
            if due > deadline:
                return
            await self.clock.sleep_until(due)
            try:
                await self.heartbeat_due(self.clock.now())
            except Exception as exc:
                log.warning("heartbeat during shutdown failed: %s", exc)
                self._heartbeat_loop.due = self.clock.now() + self.heartbeat

    def run_forever(self) -> None:
        """Serve in the foreground until SIGINT or SIGTERM (blocking)."""

        async def main() -> None:
            stopping = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stopping.set)
            try:
                await self.serve(stopping)
            finally:
                # Only a ledger this worker reached has pools to close (a namespace id is
                # learnt at the first registration and kept). Asking for the provider of one
                # it never reached would try to open it again, and fail with the same outage.
                if self.namespace_id:
                    await self.ledger.provider.aclose()

        asyncio.run(main())
