"""``ops.policy``: override a definition's policy on a running system, and read what is in force.

Overridable: ``max_attempts``, ``backoff``, ``timeout``, ``audit``, ``retention``, ``alerts``,
``priority`` (the decorator's names and spellings). An override is a compare-and-set on its
version (0 for a job never overridden); it is recorded as a ``policy-overridden`` event with the
actor and the reason. Workers pick it up at their next heartbeat: runs started from then on use
it, and recovery and retention read it in SQL at once. A priority override acts at once, in
SQL: the job's waiting jobs move to it in the same transaction, and every enqueue from then on
takes it (over a priority the enqueue names) until it is cleared; clearing it leaves waiting
jobs where they are. ``effective_policy_view`` shows the policy in
force per job name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from acta.errors import ValidationError
from acta.ledger import policy_override as verbs
from acta.ledger.control import check_actor, check_reason
from acta.ledger.doubt import once
from acta.ledger.facade import Ledger
from acta.names import validate_job_name
from acta.policy.job import JobPolicy
from acta.policy.override import FIELDS, apply, normalize, stored_key
from acta.registry import Registry


@dataclass(frozen=True, slots=True)
class PolicyInForce:
    """A job name's override and, where this application declares the job, its policies."""

    job_name: str
    overrides: dict[str, Any]
    """The stored override: max_attempts, backoff, timeout_ms, audit (code), retention_ms,
    alerts; only the fields an operator changed."""
    version: int
    """The version the next change must name (0: never overridden)."""
    declared: JobPolicy | None
    effective: JobPolicy | None


class PolicyOverrides:
    """Policy overrides of one namespace of the ledger ``ledger()`` returns."""

    def __init__(self, ledger: Callable[[], Ledger], registry: Registry, namespace: str) -> None:
        self._ledger = ledger
        self._registry = registry
        self.namespace = namespace

    def get(self, job: str) -> PolicyInForce:
        """The job's override (and declared and effective policy, if this app declares it)."""
        name, ns = validate_job_name(job), self.namespace
        policy, version = self._ledger().run(lambda: verbs.override_of(ns, name), name="read")
        return self._in_force(name, policy, version)

    async def get_async(self, job: str) -> PolicyInForce:
        name, ns = validate_job_name(job), self.namespace
        policy, version = await self._ledger().run_async(
            lambda: verbs.override_of(ns, name), name="read"
        )
        return self._in_force(name, policy, version)

    def set(self, job: str, *, expected_version: int, **options: Any) -> PolicyInForce:
        """Override fields (``max_attempts=5``, ``timeout="30s"``, ``retention=None``...).
        Options besides the fields: reason, actor."""
        name, make = self._change(job, expected_version, options, ())
        policy, version = self._ledger().run(make, name="override")
        return self._in_force(name, policy, version)

    async def set_async(self, job: str, *, expected_version: int, **options: Any) -> PolicyInForce:
        name, make = self._change(job, expected_version, options, ())
        policy, version = await self._ledger().run_async(make, name="override")
        return self._in_force(name, policy, version)

    def clear(self, job: str, *fields: str, expected_version: int, **options: Any) -> PolicyInForce:
        """Drop overridden ``fields`` (all of them when none is named): the declaration
        applies again. Options: reason, actor."""
        name, make = self._change(job, expected_version, options, fields or FIELDS)
        policy, version = self._ledger().run(make, name="override")
        return self._in_force(name, policy, version)

    async def clear_async(
        self, job: str, *fields: str, expected_version: int, **options: Any
    ) -> PolicyInForce:
        name, make = self._change(job, expected_version, options, fields or FIELDS)
        policy, version = await self._ledger().run_async(make, name="override")
        return self._in_force(name, policy, version)

    def _change(
        self, job: str, expected: Any, options: dict[str, Any], clearing: Sequence[str]
    ) -> tuple[str, Callable[[], Any]]:
        name = validate_job_name(job)
        if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
            raise ValidationError(
                "expected_version", f"got {expected!r:.80}", "the version read; 0 if none yet"
            )
        options = dict(options)
        reason = check_reason(options.pop("reason", "changed by an operator"))
        actor = check_actor(options.pop("actor", "operator"))
        if clearing:
            if options:
                raise ValidationError(
                    ", ".join(sorted(options)), "is not an option", "reason, actor"
                )
            bad = sorted(set(clearing) - set(FIELDS))
            if bad:
                raise ValidationError(", ".join(bad), "cannot be cleared", ", ".join(FIELDS))
            changes: dict[str, Any] = {}
            cleared = [stored_key(f) for f in clearing]
        else:
            changes, cleared = normalize(options), []
        ns, now = self.namespace, self._ledger().now()
        # One memory per call: a retry after a lost COMMIT reply answers as the first attempt.
        return name, once(
            verbs.change,
            ns,
            name,
            changes,
            cleared,
            expected_version=expected,
            actor=actor,
            reason=reason,
            now=now,
        )

    def _in_force(self, name: str, policy: dict[str, Any], version: int) -> PolicyInForce:
        definition = self._registry.get(name)
        declared = None if definition is None else definition.policy
        effective = None if declared is None else apply(declared, policy)
        return PolicyInForce(name, policy, version, declared, effective)
