"""What a worker registers: acta's system jobs it can run, one recurring slot per scheduled
definition it handles, the schedules those definitions declare, and (through the identity) the
definitions and their contracts. ``Worker.register`` runs the verb built here and takes the
answer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from acta.definition import JobDefinition
from acta.ledger.schedule import Declared, slot_key
from acta.model.rows import Registration
from acta.provider.verb import Verb
from acta.registry import Registry
from acta.runtime.deployment import Deployment
from acta.runtime.environment import RunEnv
from acta.runtime.identity import Identity
from acta.runtime.settings import WorkerSettings
from acta.runtime.system_jobs import SYSTEM_JOBS

Slot = tuple[JobDefinition[Any, Any], str, timedelta]
"""A recurring slot to put in place: its definition, deduplication key and first delay."""


def scheduled(registry: Registry) -> list[JobDefinition[Any, Any]]:
    """The definitions this build handles that have schedules."""
    return [d for d in registry.handled().values() if d.policy.schedules]


def slots(env: RunEnv, registry: Registry) -> list[Slot]:
    """The recurring slots a worker runs: acta's system jobs it can run here, and one per
    scheduled definition it handles (due at once: its first run arms them)."""
    found: list[Slot] = []
    for name, job in SYSTEM_JOBS.items():
        if job.available(env):
            found.append((job.definition, name, job.first(env)))  # recovery waits a heartbeat
    for definition in scheduled(registry):
        found.append((definition, slot_key(definition.name), timedelta(0)))
    return found


def registration_verb(
    identity: Identity, deployment: Deployment, settings: WorkerSettings, env: RunEnv
) -> Callable[[], Verb[Registration]]:
    """A new incarnation for ``identity`` and the verb that registers it (judged by the
    worker's own ledger and clock, ``env``'s, which a test may have given another clock)."""
    registry = deployment.registry
    return identity.incarnate(
        registry,
        deployment.namespace,
        settings,
        env.clock,
        env.ledger.now(),
        system=[job.definition for job in SYSTEM_JOBS.values()],
        slots=slots(env, registry),
        declared=[
            Declared(d.name, name, schedule)
            for d in scheduled(registry)
            for name, schedule in d.policy.schedules
        ],
        drift=deployment.contract_drift,
    )
