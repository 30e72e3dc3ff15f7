"""The registry: an application's job definitions by name, and what their enqueue needs.

Definitions are added here when they are declared; the registry becomes each one's ``owner``
(``acta.definition.DefinitionOwner``), so ``definition.enqueue(...)`` reaches the application's
producer without a definition ever knowing the application. The producer is bound once, by
whoever composes the application (``Acta``); the registry only forwards to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, Unpack

from acta.codec import DEFAULT_PAYLOAD_CAP
from acta.definition import JobDefinition
from acta.errors import ConfigurationError, InvalidPolicyError, UnknownJobError, ValidationError
from acta.ids import JobRef
from acta.names import SYSTEM_PREFIX
from acta.options import EnqueueOptions

JobLike = JobDefinition[Any, Any] | str


class Enqueuer(Protocol):
    """The producer a registry forwards its definitions' enqueue shortcuts to."""

    def enqueue(
        self,
        job: JobLike,
        input: object = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef: ...

    async def enqueue_async(
        self,
        job: JobLike,
        input: object = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef: ...


class Registry:
    """Job definitions by name, with the payload cap every enqueue and result respects."""

    def __init__(self, payload_cap: int = DEFAULT_PAYLOAD_CAP) -> None:
        if isinstance(payload_cap, bool) or not isinstance(payload_cap, int) or payload_cap < 1:
            raise ValidationError("payload_cap", f"got {payload_cap!r}", "a positive int of bytes")
        self.payload_cap = payload_cap
        self._definitions: dict[str, JobDefinition[Any, Any]] = {}
        self._producer: Enqueuer | None = None

    def bind(self, producer: Enqueuer) -> None:
        """Route the definitions' ``enqueue`` shortcuts to ``producer``."""
        self._producer = producer

    # -- definitions ------------------------------------------------------------------------

    def add(self, definition: JobDefinition[Any, Any]) -> JobDefinition[Any, Any]:
        """Register ``definition`` (the very same object may be added again)."""
        existing = self._definitions.get(definition.name)
        # Only the very same object may be added again: a second declaration, even of the same
        # handler or of two handler-less definitions, would silently replace types and policy.
        if existing is not None and existing is not definition:
            raise ConfigurationError(f"job {definition.name!r} is declared twice")
        if definition.owner is not None and definition.owner is not self:
            raise ConfigurationError(
                f"job {definition.name!r} is already registered with another application"
            )
        self._check_meter(definition)
        definition.owner = self
        self._definitions[definition.name] = definition
        return definition

    def _check_meter(self, definition: JobDefinition[Any, Any]) -> None:
        """Definitions sharing a meter (one rate_key, or a rate_key naming a definition with a
        meter of its own) must declare one rate: the meter has one."""
        meter = _meter(definition)
        if meter is None:
            return
        for other in self._definitions.values():
            if other is definition or _meter(other) != meter:
                continue
            ours, theirs = definition.policy.rate_limit, other.policy.rate_limit
            if theirs != ours:
                raise InvalidPolicyError(
                    "rate_limit",
                    f"job {definition.name!r} declares {ours} for meter {meter!r}, but job "
                    f"{other.name!r} declares {theirs}",
                    "definitions sharing a rate_key declare the same rate_limit",
                )

    @property
    def definitions(self) -> Mapping[str, JobDefinition[Any, Any]]:
        """A copy of the registered definitions by name."""
        return dict(self._definitions)

    def get(self, name: str) -> JobDefinition[Any, Any] | None:
        return self._definitions.get(name)

    def handled(self) -> dict[str, JobDefinition[Any, Any]]:
        """The definitions this build has a handler for, by name."""
        return {name: d for name, d in self._definitions.items() if d.handler is not None}

    def resolve(self, job: JobLike) -> JobDefinition[Any, Any]:
        """The registered definition for a name or definition object; UnknownJobError if none."""
        name = job.name if isinstance(job, JobDefinition) else job
        found = self._definitions.get(name) if isinstance(name, str) else None
        if found is None:
            known = (
                ", ".join(sorted(n for n in self._definitions if not n.startswith(SYSTEM_PREFIX)))
                or "none"
            )
            raise UnknownJobError(
                f"job {name!r} is not declared in this application (declared: {known}); "
                "declare it with @app.job or app.define"
            )
        if isinstance(job, JobDefinition) and job is not found:
            # Same name, other declaration: its input type and policy are not the ones here.
            raise UnknownJobError(
                f"job {name!r} was passed as a definition of another application; pass this "
                "application's definition or the name"
            )
        return found

    def owns(self, definition: JobDefinition[Any, Any]) -> bool:
        """Whether ``definition`` is the one registered here under its name."""
        return self._definitions.get(definition.name) is definition

    # -- the definitions' enqueue shortcuts -------------------------------------------------

    def enqueue(
        self,
        job: JobDefinition[Any, Any],
        input: Any = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        return self._bound().enqueue(job, input, connection=connection, **options)

    async def enqueue_async(
        self,
        job: JobDefinition[Any, Any],
        input: Any = None,
        *,
        connection: object = None,
        **options: Unpack[EnqueueOptions],
    ) -> JobRef:
        return await self._bound().enqueue_async(job, input, connection=connection, **options)

    def _bound(self) -> Enqueuer:
        if self._producer is None:
            raise ConfigurationError(
                "this registry has no producer bound; enqueue through an Acta application"
            )
        return self._producer


def _meter(definition: JobDefinition[Any, Any]) -> str | None:
    policy = definition.policy
    if policy.rate_limit is None:
        return None
    return policy.rate_key or definition.name
