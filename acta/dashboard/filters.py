"""The Jobs page's filters, read from a query string and checked before any SQL runs.

A malformed filter is a ``ValidationError`` naming the parameter and the rule, which the page
and the API answer with 400; an unknown parameter is refused the same way, so a typo never
silently shows every job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from acta.errors import ValidationError
from acta.model.codes import JobStatus
from acta.names import validate_job_name
from acta.tenants import check_tenant_key

PAGE_DEFAULT = 50
PAGE_MAX = 200
TEXT_MAX = 200
ALLOWED = (
    "status",
    "job",
    "tag",
    "correlation_key",
    "tenant",
    "lane",
    "error",
    "created_from",
    "created_to",
    "before",
    "limit",
    "include_system",
)


@dataclass(frozen=True, slots=True)
class JobFilter:
    status: JobStatus | None = None
    job: str | None = None
    tag: str | None = None
    correlation_key: str | None = None
    tenant: str | None = None
    lane: str | None = None
    error: str | None = None
    """Text any of the job's failure messages holds (case-insensitive)."""
    created_from: datetime | None = None
    created_to: datetime | None = None
    before: int | None = None
    limit: int = PAGE_DEFAULT
    include_system: bool = False

    def params(self) -> dict[str, Any]:
        """The statement's parameters (one more row than the page: is there a next page?)."""
        return {
            "status": None if self.status is None else int(self.status),
            "job_name": self.job,
            "tag": self.tag,
            "correlation_key": self.correlation_key,
            "tenant": self.tenant,
            "lane": self.lane,
            "error": self.error,
            "created_from": self.created_from,
            "created_to": self.created_to,
            "before_id": self.before,
            "limit": self.limit + 1,
            "include_system": 1 if self.include_system else 0,
        }

    def query(self, **changes: Any) -> dict[str, str]:
        """This filter as query parameters (for links), with ``changes`` applied."""
        values: dict[str, Any] = {
            "status": None if self.status is None else self.status.label,
            "job": self.job,
            "tag": self.tag,
            "correlation_key": self.correlation_key,
            "tenant": self.tenant,
            "lane": self.lane,
            "error": self.error,
            "created_from": None if self.created_from is None else self.created_from.isoformat(),
            "created_to": None if self.created_to is None else self.created_to.isoformat(),
            "before": self.before,
            "limit": None if self.limit == PAGE_DEFAULT else self.limit,
            "include_system": "1" if self.include_system else None,
        }
        values.update(changes)
        return {k: str(v) for k, v in values.items() if v is not None and v != ""}


def parse(query: Mapping[str, str], keys: list[str]) -> JobFilter:
    """A checked filter from the query parameters (``keys``: every name sent, repeats too)."""
    for key in keys:
        if key not in ALLOWED:
            raise ValidationError(key, "is not a filter", f"filters: {', '.join(ALLOWED)}")
    if len(keys) != len(set(keys)):
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        raise ValidationError(repeated[0], "is given more than once", "each filter at most once")

    def text(name: str) -> str | None:
        return clean_text(name, query.get(name))

    return JobFilter(
        status=_status(text("status")),
        job=_job(text("job")),
        tag=text("tag"),
        correlation_key=text("correlation_key"),
        tenant=_tenant(query.get("tenant")),
        lane=text("lane"),
        error=text("error"),
        created_from=_instant("created_from", text("created_from")),
        created_to=_instant("created_to", text("created_to")),
        before=_int("before", text("before"), 1, 2**63 - 1, None),
        limit=_int("limit", text("limit"), 1, PAGE_MAX, PAGE_DEFAULT) or PAGE_DEFAULT,
        include_system=_flag(text("include_system")),
    )


def clean_text(name: str, raw: object) -> str | None:
    """A text filter trimmed (None when empty), refused when too long or not printable."""
    value = str(raw or "").strip()
    if not value:
        return None
    if len(value) > TEXT_MAX or not value.isprintable():
        raise ValidationError(
            name,
            "is too long or holds control characters",
            f"printable text of at most {TEXT_MAX} characters",
        )
    return value


def _status(value: str | None) -> JobStatus | None:
    if value is None:
        return None
    for member in JobStatus:
        if member.label == value:
            return member
    raise ValidationError(
        "status", f"got {value!r}", f"one of {', '.join(m.label for m in JobStatus)}"
    )


def _job(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        validate_job_name(value, allow_system=True)
    except ValidationError as exc:
        raise ValidationError("job", exc.problem, exc.rule) from None
    return value


def _tenant(value: str | None) -> str | None:
    """A tenant key checked by the rule ``app.tenants`` applies (no trimming: a key with
    edge spaces is refused, not silently changed into another key)."""
    if value is None or value == "":
        return None
    return _keyed("tenant", value)


INSTANT_RULE = (
    "an ISO 8601 instant in the years 1 to 9999 once moved to UTC, e.g. 2026-01-31T12:00:00Z"
)


def _instant(name: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    return parse_instant(name, value, INSTANT_RULE)


def parse_instant(name: str, value: str, rule: str) -> datetime:
    """``value`` as an aware UTC instant (no offset: UTC), or a ValidationError naming ``name``.

    Moving a far-offset instant to UTC can leave the calendar (year 1 at +14:00, year 9999 at
    -14:00): that is the caller's bad input too, not a crash."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValidationError(name, f"got {value!r:.80}", rule) from None


def whole_number(value: str) -> bool:
    """ASCII digits only: ``isdigit()`` alone takes superscripts, which ``int()`` refuses, and
    other scripts' digits, which ``int()`` reads."""
    return value.isascii() and value.isdigit()


def _int(name: str, value: str | None, low: int, high: int, default: int | None) -> int | None:
    if value is None:
        return default
    if not whole_number(value) or not low <= int(value) <= high:
        raise ValidationError(name, f"got {value!r:.80}", f"a whole number from {low} to {high}")
    return int(value)


def _flag(value: str | None) -> bool:
    if value in (None, "0", "false"):
        return False
    if value in ("1", "true"):
        return True
    raise ValidationError("include_system", f"got {value!r}", "1 or 0")


TENANT_PARAMS = ("after", "limit")


@dataclass(frozen=True, slots=True)
class TenantPage:
    """Which page of the Tenants page: the keys after ``after``, ``limit`` of them."""

    after: str | None = None
    limit: int = PAGE_DEFAULT


def parse_tenant_page(query: Mapping[str, str], keys: list[str]) -> TenantPage:
    """A checked tenants page from the query parameters (``keys``: every name sent)."""
    for key in keys:
        if key not in TENANT_PARAMS:
            raise ValidationError(
                key, "is not a parameter", f"parameters: {', '.join(TENANT_PARAMS)}"
            )
    if len(keys) != len(set(keys)):
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        raise ValidationError(repeated[0], "is given more than once", "each parameter at most once")
    after = query.get("after") or None
    limit = query.get("limit") or None
    return TenantPage(
        after=None if after is None else _keyed("after", after),
        limit=_int("limit", limit, 1, PAGE_MAX, PAGE_DEFAULT) or PAGE_DEFAULT,
    )


def _keyed(name: str, value: str) -> str:
    try:
        return check_tenant_key(value)
    except ValidationError as exc:
        raise ValidationError(name, exc.problem, exc.rule) from None
