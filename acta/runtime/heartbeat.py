"""The heartbeat: proving a worker incarnation alive and renewing the leases it holds.

Each beat renews the (job, epoch) leases of the runs the worker holds, learns which of them it
lost (recovered, re-claimed) and which an operator asked to cancel, and stops those runs. Each
beat also puts the recovery slot back if the worker running it died (recovery cannot recover
itself). A worker that finds itself declared dead stops every run and registers anew: it never
writes again under the old identity.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from acta.ledger.facade import Ledger
from acta.ledger.incarnation import heartbeat
from acta.model.rows import Heartbeat
from acta.runtime.identity import Identity
from acta.runtime.run import Run, Stop

log = logging.getLogger("acta.worker")
_MS = timedelta(milliseconds=1)


class Heartbeats:
    """Beats for one worker: ``runs`` are the runs it holds, ``register`` makes it a new
    incarnation after it was declared dead."""

    def __init__(
        self,
        ledger: Ledger,
        identity: Identity,
        lease: timedelta,
        runs: Mapping[int, Run],
        register: Callable[[], Awaitable[None]],
        on_overrides: Callable[[Mapping[str, Mapping[str, Any]]], None] = lambda found: None,
    ) -> None:
        self.on_overrides = on_overrides
        """Told the namespace's policy overrides after every heartbeat."""
        self.ledger = ledger
        self.identity = identity
        self.lease = lease
        self.runs = runs
        self.register = register

    async def beat(self) -> Heartbeat:
        me, ledger = self.identity, self.ledger
        held = [(run.job.job_id, run.job.epoch) for run in self.runs.values()]
        args = (me.worker_id, me.namespace_id, held, self.lease // _MS, me.recovery_job_id)
        now = ledger.now()
        result = await ledger.run_async(lambda: heartbeat(*args, now), name="heartbeat")
        if not result.alive:
            log.error(
                "worker %s was declared dead; stopping its runs and registering again",
                me.incarnation,
            )
            for run in list(self.runs.values()):
                run.stop(Stop.LEASE_LOST)
            me.worker_id = 0
            await self.register()
            return result
        self.on_overrides(result.policy_overrides)
        for job_id in result.lost:
            if job_id in self.runs:
                self.runs[job_id].stop(Stop.LEASE_LOST)
        for job_id, control in result.cancel_requested.items():
            if job_id in self.runs:
                self.runs[job_id].cancel_control = control
                self.runs[job_id].stop(Stop.CANCEL)
        return result
