"""A job definition's policy: how its jobs are retried, timed out, ordered and audited.

Validated once, when the job is declared, so a bad policy fails at import time rather than at
the first enqueue. The values are plain data; what they mean for a run that ends is decided in
``acta.policy.settlement``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum

from acta.backoff import DEFAULT_BACKOFF, Backoff
from acta.duration import parse_duration
from acta.errors import InvalidPolicyError, ValidationError
from acta.model.codes import AuditLevel
from acta.names import validate_key, validate_tags
from acta.policy.gate import Rate, validate_concurrency_limit
from acta.policy.schedule import Schedule, parse_schedules

DEFAULT_MAX_ATTEMPTS = 15
MAX_ATTEMPTS_LIMIT = 1000
PRIORITY_RANGE = range(-100, 101)
KEY_MAX = 200
TENANT_SCOPES = ("required", "forbidden")
"""The longest lane, concurrency key or rate key, in characters."""
DEFAULT_RETENTION = timedelta(days=7)
"""How long a finished job's rows stay before ``sys.retention`` purges them (see
docs/guide/retention.md for why a week)."""
RETENTION_RANGE = (timedelta(minutes=1), timedelta(days=365))
_AUDIT_NAMES = {level.label: level for level in AuditLevel}


class AlertProfile(Enum):
    """Which failures of a definition open (or join) a failure incident."""

    TERMINAL = "terminal"
    """Only failures that end the job (the default)."""
    ALL = "all"
    """Every failed run, including the ones that will be retried."""
    OFF = "off"
    """None: the definition never opens a failure incident."""

    def reports(self, final: bool) -> bool:
        """Whether a failure (``final``: it ends the job) is reported under this profile."""
        return self is AlertProfile.ALL or (final and self is AlertProfile.TERMINAL)


@dataclass(frozen=True, slots=True)
class JobPolicy:
    """How a definition's jobs are retried, timed out, ordered and audited."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff: Backoff = DEFAULT_BACKOFF
    timeout: timedelta | None = None
    priority: int = 0
    audit: AuditLevel = AuditLevel.FULL
    lane: str | None = None
    """The lane every job of the definition joins unless its enqueue names another."""
    concurrency_limit: int | None = None
    """Slots per concurrency key when the enqueue names one, else across the definition."""
    rate_limit: Rate | None = None
    rate_key: str | None = None
    """The meter shared by definitions declaring the same rate; the definition's own if None."""
    schedules: tuple[tuple[str, Schedule], ...] = ()
    """The recurring schedules that fire the definition, by name (empty: enqueued only)."""
    retention: timedelta | None = DEFAULT_RETENTION
    """How long after it finishes a job's rows are kept; None keeps them forever."""
    alerts: AlertProfile = AlertProfile.TERMINAL
    """Which failures open a failure incident (see docs/guide/alerts.md)."""
    tenant: str | None = None
    """Tenant scope: 'required' (every enqueue names a tenant), 'forbidden' (none may), or
    None (either)."""
    tags: tuple[str, ...] = ()
    """The definition's own tags (who owns it, what it is about), stored on its row."""

    @property
    def gated(self) -> bool:
        """Whether every job of the definition passes an admission gate (limit or rate)."""
        return self.concurrency_limit is not None or self.rate_limit is not None

    @classmethod
    def build(
        cls,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: str | Backoff = DEFAULT_BACKOFF,
        timeout: str | float | timedelta | None = None,
        priority: int = 0,
        audit: str | AuditLevel = AuditLevel.FULL,
        lane: str | None = None,
        concurrency_limit: int | None = None,
        rate_limit: str | Rate | None = None,
        rate_key: str | None = None,
        schedule: str | timedelta | Schedule | None = None,
        schedules: Mapping[str, str | timedelta | Schedule] | None = None,
        retention: str | float | timedelta | None = DEFAULT_RETENTION,
        alerts: str | AlertProfile = AlertProfile.TERMINAL,
        tenant: str | None = None,
        definition_tags: Iterable[str] = (),
    ) -> JobPolicy:
        """Validate user-facing policy arguments into a JobPolicy."""
        if rate_key is not None and rate_limit is None:
            raise InvalidPolicyError(
                "rate_key", f"got {rate_key!r} without a rate_limit", "declare rate_limit too"
            )
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
            lane=None if lane is None else _key(lane, "lane"),
            concurrency_limit=(
                None if concurrency_limit is None else validate_concurrency_limit(concurrency_limit)
            ),
            rate_limit=None if rate_limit is None else Rate.parse(rate_limit),
            rate_key=None if rate_key is None else _key(rate_key, "rate_key"),
            schedules=parse_schedules(schedule, schedules),
            retention=None if retention is None else validate_retention(retention),
            alerts=_alerts(alerts),
            tenant=_tenant_scope(tenant),
            tags=validate_tags(definition_tags, field="definition_tags"),
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


def validate_retention(value: object) -> timedelta:
    """A retention is a duration from one minute to 365 days (None, elsewhere: forever)."""
    rule = "a duration from 1m to 365d, e.g. '14d', or None to keep finished jobs forever"
    if isinstance(value, bool) or not isinstance(value, (str, int, float, timedelta)):
        raise InvalidPolicyError("retention", f"got {value!r:.80}", rule)
    try:
        parsed = parse_duration(value, field="retention")
    except ValidationError as exc:
        raise InvalidPolicyError("retention", exc.problem, rule) from None
    low, high = RETENTION_RANGE
    if not low <= parsed <= high:
        raise InvalidPolicyError("retention", f"got {value!r:.80}", rule)
    return parsed


def _timeout(value: str | float | timedelta) -> timedelta:
    try:
        return parse_duration(value, field="timeout")
    except ValidationError as exc:  # a policy error, like every other policy argument
        raise InvalidPolicyError(exc.field, exc.problem, exc.rule) from None


def _key(value: str, field: str) -> str:
    try:
        return validate_key(value, field=field, max_length=KEY_MAX)
    except ValidationError as exc:  # a policy error, like every other policy argument
        raise InvalidPolicyError(exc.field, exc.problem, exc.rule) from None


def _audit(value: str | AuditLevel) -> AuditLevel:
    if isinstance(value, AuditLevel):
        return value
    level = _AUDIT_NAMES.get(value) if isinstance(value, str) else None
    if level is None:
        raise InvalidPolicyError("audit", f"got {value!r}", "one of 'full', 'failures', 'off'")
    return level


def _tenant_scope(value: object) -> str | None:
    if value is None or (isinstance(value, str) and value in TENANT_SCOPES):
        return value
    raise InvalidPolicyError(
        "tenant", f"got {value!r:.80}", "'required', 'forbidden', or None (a tenant is optional)"
    )


def _alerts(value: str | AlertProfile) -> AlertProfile:
    if isinstance(value, AlertProfile):
        return value
    for profile in AlertProfile:
        if value == profile.value:
            return profile
    raise InvalidPolicyError("alerts", f"got {value!r}", "one of 'terminal', 'all', 'off'")
