"""The claimer: leasing due jobs for a worker's free executors, and its system jobs.

A claim leases up to ``limit`` due jobs in claim order and starts, in the same commit, as many
of them as there are free executors (only definitions this build has a handler for and knows
the id of; the rest are only leased and the run decides). Each claimed job becomes a ``Run``.

acta's own system jobs (recovery) must never wait behind user work: a worker whose executors
are all busy does not claim, so without help a due recovery could sit unclaimed while every
worker is busy, or wait in a busy worker's queue with its lease renewed. So a busy worker still
takes a due system job by its id (``claim_system``), and system runs need no executor slot.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from datetime import timedelta

from acta.ledger.claim import claim, claim_job
from acta.ledger.facade import Ledger
from acta.model.codes import EventCode, audited
from acta.registry import Registry
from acta.runtime.identity import Identity
from acta.runtime.run import Run
from acta.runtime.system_jobs import SYSTEM_JOBS

_MS = timedelta(milliseconds=1)


class Claimer:
    """Claims for one worker: what it may start at once, and which definitions it skips."""

    def __init__(
        self,
        ledger: Ledger,
        registry: Registry,
        identity: Identity,
        lease: timedelta,
        skipped: set[int],
    ) -> None:
        self.ledger = ledger
        self.registry = registry
        self.identity = identity
        self.lease = lease
        self.skipped = skipped
        self._definition_ids: dict[str, int] = {}
        self._startable: tuple[frozenset[int], frozenset[int]] | None = None

    def learn(self, definition_ids: dict[str, int]) -> None:
        """The definition ids a registration returned (a new incarnation learns them anew)."""
        self._definition_ids, self._startable = dict(definition_ids), None

    async def claim(self, limit: int, start: int, held: Collection[int]) -> list[Run]:
        """Lease up to ``limit`` due jobs, starting the first ``start`` of them now."""
        loop = asyncio.get_running_loop()
        ledger, me = self.ledger, self.identity
        args = (me.worker_id, me.namespace_id, limit, frozenset(self.skipped), self.lease // _MS)
        now, fused = ledger.now(), ledger.fused
        startable, quiet = self._claim_sets()
        pairs = await ledger.run_async(
            lambda: claim(*args, now, startable, quiet, start=start, fused=fused, held=held),
            name="claim",
        )
        return [Run(job, loop, started=started) for job, started in pairs]

    async def claim_system(self) -> Run | None:
        """Lease the recovery slot if it is due, whatever this worker's load."""
        if not self.identity.recovery_job_id:
            return None
        return await self.claim_one(self.identity.recovery_job_id)

    async def claim_one(self, job_id: int) -> Run | None:
        """Lease one given job if it is ready and due (None otherwise)."""
        ledger, me = self.ledger, self.identity
        args = (me.worker_id, me.namespace_id, job_id, self.lease // _MS, ledger.now())
        job = await ledger.run_async(lambda: claim_job(*args), name="claim")
        return None if job is None else Run(job, asyncio.get_running_loop())

    def _claim_sets(self) -> tuple[frozenset[int], frozenset[int]]:
        """Which definitions a claim may start at once, and which of those leave out the
        execution-started event (their audit level). Only definitions this build has a handler
        for and whose id it learnt at registration qualify; a job of any other definition is
        only leased, and the run decides (start it, or hand it back for want of a handler)
        with the definition's live policy."""
        if self._startable is None:
            own = {name: s.definition for name, s in SYSTEM_JOBS.items()}
            own.update(self.registry.handled())
            ids = self._definition_ids
            known = {name: d for name, d in own.items() if name in ids}
            self._startable = (
                # A definition with a gate waits for admission: never started by the claim.
                frozenset(ids[name] for name, d in known.items() if not d.policy.gated),
                frozenset(
                    ids[name]
                    for name, d in known.items()
                    if not audited(d.policy.audit, EventCode.EXECUTION_STARTED)
                ),
            )
        return self._startable
