"""A worker's identity in the ledger: one incarnation per registration, never reused.

Registering writes the definitions this build handles, a ``workers`` row for a new incarnation
(``host:pid:random``) and, if the namespace has none yet, the recurring slots it runs. A worker
declared dead registers again and becomes a new incarnation; nothing it does later is written
under the old one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from acta.clock import Clock
from acta.definition import JobDefinition
from acta.ids import JobRef, new_incarnation
from acta.ledger.incarnation import register
from acta.ledger.schedule import SLOT_KEY_PREFIX, Declared
from acta.model.rows import NewJob, Registration, WorkerSpec
from acta.provider.verb import Verb
from acta.registry import Registry
from acta.runtime.settings import WorkerSettings

_MS = timedelta(milliseconds=1)


@dataclass(eq=False)
class Identity:
    """Who a worker is in the ledger right now (a new incarnation after it was declared dead)."""

    incarnation: str = ""
    worker_id: int = 0
    namespace_id: int = 0
    recovery_job_id: int = 0
    slot_ids: dict[str, int] = field(default_factory=dict)
    """The recurring slots this incarnation registered, by deduplication key."""
    schedule_slots: frozenset[int] = frozenset()
    """The job ids of the schedule slots among them: their runs open and close firings."""

    @property
    def registered(self) -> bool:
        return self.worker_id != 0

    def incarnate(
        self,
        registry: Registry,
        namespace: str,
        settings: WorkerSettings,
        clock: Clock,
        now: datetime | None,
        *,
        system: Sequence[JobDefinition[Any, Any]],
        slots: Sequence[tuple[JobDefinition[Any, Any], str, timedelta]],
        declared: Sequence[Declared] = (),
        drift: str = "warn",
    ) -> Callable[[], Verb[Registration]]:
        """Take a new incarnation name and return the registration verb for it: this build's
        handled definitions and acta's ``system`` ones, and the recurring ``slots`` it runs,
        each a (definition, deduplication key, first delay)."""
        self.incarnation = new_incarnation(settings.host, os.getpid())
        specs = [d.spec() for d in registry.handled().values()]
        specs += [d.spec() for d in system]
        ref_ms = int(clock.now().timestamp() * 1000)
        jobs = [
            NewJob(
                job_ref=str(JobRef.new(ref_ms)),
                definition=definition.name,
                input_codec=1,
                input=b"null",
                priority=definition.policy.priority,
                run_at=None,
                delay_ms=delay // _MS,
                dedup_key=key,
                correlation_key=None,
                tags=(),
                audit_level=definition.policy.audit,
            )
            for definition, key, delay in slots
        ]
        worker = WorkerSpec(
            self.incarnation,
            settings.host,
            os.getpid(),
            settings.executors,
            settings.heartbeat // _MS,
            json.dumps(sorted(settings.tags)),
        )
        contracts = [] if drift == "off" else [d.contract() for d in registry.handled().values()]
        return lambda: register(
            namespace, specs, worker, jobs, now, declared, contracts=contracts, drift=drift
        )

    def registered_as(self, registration: Registration) -> dict[str, int]:
        """Take the ids a registration returned; the definition ids, for the claimer."""
        self.worker_id = registration.worker_id
        self.namespace_id = registration.namespace_id
        self.recovery_job_id = registration.recovery_job_id
        self.slot_ids = dict(registration.slot_ids)
        self.schedule_slots = frozenset(
            job_id for key, job_id in self.slot_ids.items() if key.startswith(SLOT_KEY_PREFIX)
        )
        return dict(registration.definition_ids)
