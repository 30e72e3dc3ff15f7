"""The run environment: the narrow port through which one run reaches its worker.

A run (``acta.runtime.execution``), the handler call (``acta.runtime.handler``) and acta's
system jobs see only this: the definitions, the ledger and clock, the worker's identity, the
committer for starts and settles, the executor slots and the thread pool, and the flags that
say the worker is dying or giving up. The worker composes it; nothing here reaches back into
the worker. Admission (gates) and each run's durable port (``acta.runtime.durable``) use it.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from acta.clock import Clock
from acta.definition import JobDefinition
from acta.ledger.admission import Admission
from acta.ledger.facade import Ledger
from acta.model.codes import AuditLevel
from acta.model.rows import Bounced, Claimed, Started
from acta.outbox.source import OutboxSource
from acta.policy.gate import JobGates, bounce_delay
from acta.policy.override import apply as apply_override
from acta.registry import Registry
from acta.runtime.committer import Committer
from acta.runtime.identity import Identity
from acta.runtime.settings import WorkerSettings
from acta.runtime.slots import Slots

log = logging.getLogger("acta.worker")

# How long a stopped async handler, or a flagged sync one, gets to unwind before the worker
# settles without it. Waited on the worker's clock, so a test clock decides it.
CANCEL_GRACE = timedelta(seconds=1)


class RunEnv:
    """What a run may use of the worker that holds it."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        registry: Registry,
        clock: Clock,
        identity: Identity,
        committer: Committer,
        slots: Slots,
        threads: ThreadPoolExecutor,
        rng: random.Random,
        heartbeat: timedelta,
        retry_settles: bool,
        namespace: str = "default",
        ring: Callable[[], None] | None = None,
        outbox: OutboxSource | None = None,
        settings: WorkerSettings | None = None,
    ) -> None:
        self.ledger = ledger
        self.registry = registry
        self.clock = clock
        self.identity = identity
        self.committer = committer
        self.slots = slots
        self.threads = threads
        self.rng = rng
        self.heartbeat = heartbeat
        self.retry_settles = retry_settles
        self.namespace = namespace
        self.ring = ring
        """Wakes this process's idle workers (after a handler spawned children)."""
        self.outbox = outbox
        """The outbox source this worker relays from, if any (only it runs sys.outbox)."""
        self.settings = settings or WorkerSettings.build(heartbeat=heartbeat)
        """The worker's settings, for the system jobs' knobs (retention's cadence, say)."""
        self.killed = False
        """The process is gone (or behaves as if): no write of any kind from now on."""
        self.giving_up = asyncio.Event()
        """Set when unfinished runs are given up (shutdown past its grace, or a kill): settles
        waiting for the database to come back stop waiting."""
        self.policy_overrides: dict[str, dict[str, Any]] = {}
        """Operators' overrides of this namespace's policies, as of the last heartbeat."""
        self._effective: dict[str, JobDefinition[Any, Any]] = {}
        self.skipped: set[int] = set()
        """Definitions this build has no handler for: handed back, then never claimed again."""

    async def admit(
        self, job: Claimed, gates: JobGates, audit: AuditLevel
    ) -> Started | Bounced | None:
        """Pass a claimed job through its gates and start it (group-committed with other
        admissions); Bounced if a gate turned it away, None if its lease is gone."""
        return await self.committer.admit(Admission(job, gates, audit, bounce_delay(self.rng)))

    def definition(self, name: str) -> JobDefinition[Any, Any] | None:
        """This build's definition of ``name``, with an operator's policy override in force."""
        found = self.registry.get(name)
        overrides = self.policy_overrides.get(name)
        if found is None or not overrides:
            return found
        effective = self._effective.get(name)
        if effective is None:
            effective = copy.copy(found)
            effective.policy = apply_override(found.policy, overrides)
            self._effective[name] = effective
        return effective

    def use_overrides(self, found: Mapping[str, Mapping[str, Any]]) -> None:
        """Take the namespace's policy overrides a heartbeat or a registration read."""
        if found != self.policy_overrides:
            self.policy_overrides = {name: dict(policy) for name, policy in found.items()}
            self._effective = {}

    def skip_definition(self, definition_id: int, name: str) -> None:
        """Stop claiming a definition this build has no handler for (a rolling deploy)."""
        if definition_id not in self.skipped:
            log.warning(
                "no handler for %r in this worker; handing it back and not claiming it again", name
            )
            self.skipped.add(definition_id)

    async def within_grace(self, future: asyncio.Future[Any], since: datetime) -> None:
        """Wait until ``future`` is done or the cancel grace after ``since`` has passed on the
        worker's clock. Whatever the future ends with later is retrieved, so asyncio never
        logs a stopped handler's exception as "never retrieved"."""
        future.add_done_callback(_retrieve)
        if future.done():
            return
        timer = asyncio.ensure_future(self.clock.sleep_until(since + CANCEL_GRACE))
        try:
            await asyncio.wait({future, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
