"""A job definition's policy: how its jobs are retried, timed out, ordered and audited.

Validated once, when the job is declared, so a bad policy fails at import time rather than at
the first enqueue. The values are plain data; what they mean for a run that ends is decided in
``acta.policy.settlement``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from acta.backoff import DEFAULT_BACKOFF, Backoff
from acta.duration import parse_duration
from acta.errors import InvalidPolicyError, ValidationError
from acta.model.codes import AuditLevel

DEFAULT_MAX_ATTEMPTS = 15
MAX_ATTEMPTS_LIMIT = 1000
PRIORITY_RANGE = range(-100, 101)
_AUDIT_NAMES = {level.label: level for level in AuditLevel}


@dataclass(frozen=True, slots=True)
class JobPolicy:
    """How a definition's jobs are retried, timed out, ordered and audited."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff: Backoff = DEFAULT_BACKOFF
    timeout: timedelta | None = None
    priority: int = 0
    audit: AuditLevel = AuditLevel.FULL

    @classmethod
    def build(
        cls,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: str | Backoff = DEFAULT_BACKOFF,
        timeout: str | float | timedelta | None = None,
        priority: int = 0,
        audit: str | AuditLevel = AuditLevel.FULL,
    ) -> JobPolicy:
        """Validate user-facing policy arguments into a JobPolicy."""
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
            raise InvalidPolicyError(
                "max_attempts", f"got {max_attempts!r}", "an int from 1 to 1000"
            )
        if not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
            raise InvalidPolicyError("max_attempts", f"got {max_attempts}", "an int from 1 to 1000")
        parsed_backoff = backoff if isinstance(backoff, Backoff) else Backoff.parse(backoff)
        parsed_timeout = None if timeout is None else _timeout(timeout)
        return cls(
            max_attempts=max_attempts,
            backoff=parsed_backoff,
            timeout=parsed_timeout,
            priority=validate_priority(priority),
            audit=_audit(audit),
        )


def validate_priority(priority: object, field: str = "priority") -> int:
    """Priorities are ints from -100 to 100; higher runs first."""
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or priority not in PRIORITY_RANGE
    ):
        raise InvalidPolicyError(
            field, f"got {priority!r}", "an int from -100 to 100, higher first"
        )
    return priority


def _timeout(value: str | float | timedelta) -> timedelta:
    try:
        return parse_duration(value, field="timeout")
    except ValidationError as exc:  # a policy error, like every other policy argument
        raise InvalidPolicyError(exc.field, exc.problem, exc.rule) from None


def _audit(value: str | AuditLevel) -> AuditLevel:
    if isinstance(value, AuditLevel):
        return value
    level = _AUDIT_NAMES.get(value) if isinstance(value, str) else None
    if level is None:
        raise InvalidPolicyError("audit", f"got {value!r}", "one of 'full', 'failures', 'off'")
    return level
