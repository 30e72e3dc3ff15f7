"""Argument checks of the repair verbs (``acta.repair``): who and why, attempt limits, and the
filters of bulk verbs. Each raises a ValidationError naming the argument and the rule, before
any statement runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from acta.errors import ValidationError
from acta.instant import check_instant
from acta.ledger.control import MAX_ACTOR, MAX_REASON, check_actor
from acta.ledger.events import Who
from acta.ledger.repair_bulk import JobFilter
from acta.model.codes import JobStatus
from acta.names import validate_job_name, validate_key, validate_text
from acta.policy.job import MAX_ATTEMPTS_LIMIT

TAG_MAX = 64

_FILTERS = (
    "status",
    "name",
    "tag",
    "correlation_key",
    "created_after",
    "created_before",
    "finished_before",
    "tenant",
)


REASON_MAX = MAX_REASON - MAX_ACTOR - 40
"""The longest reason a repair verb takes (760 characters). Retiring a definition cancels its
queue with the reason behind a short prefix in each cancelled event's message, which must still
fit ``MAX_REASON``; the limit stays where it was when the actor rode in that message too, so
what was accepted before is accepted now, and nothing more."""


def check_who(actor: str, reason: str) -> Who:
    return Who(
        check_actor(actor),
        validate_text(reason, field="reason", max_length=REASON_MAX),
    )


def check_max_attempts(value: object) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_ATTEMPTS_LIMIT
    ):
        raise ValidationError(
            "max_attempts", f"got {value!r}", f"an int from 1 to {MAX_ATTEMPTS_LIMIT}"
        )
    return value


def job_filter(given: dict[str, object], allowed: tuple[JobStatus, ...], verb: str) -> JobFilter:
    """A checked filter; its statuses default to every status the verb takes."""
    unknown = sorted(set(given) - set(_FILTERS))
    if unknown:
        raise ValidationError(
            "filter", f"unknown {', '.join(unknown)}", f"one of {', '.join(_FILTERS)}"
        )
    statuses = _statuses(given.get("status"), allowed, verb)
    name, tag, key = given.get("name"), given.get("tag"), given.get("correlation_key")
    instants = {
        k: None if given.get(k) is None else check_instant(given[k], k)
        for k in ("created_after", "created_before", "finished_before")
    }
    after, before = instants["created_after"], instants["created_before"]
    if after is not None and before is not None and after >= before:
        raise ValidationError(
            "created_after",
            f"{after} is not before created_before {before}",
            "an empty time range matches nothing; give after < before",
        )
    flt = JobFilter(
        statuses=(),
        name=None if name is None else validate_job_name(_text(name, "name")),
        tag=None if tag is None else validate_key(_text(tag, "tag"), field="tag", max_length=64),
        correlation_key=None
        if key is None
        else validate_key(_text(key, "correlation_key"), field="correlation_key"),
        **instants,
        tenant=None
        if given.get("tenant") is None
        else validate_key(_text(given["tenant"], "tenant"), field="tenant"),
    )
    if flt.empty and given.get("status") is None:
        raise ValidationError(
            "filter",
            f"a bulk {verb} needs at least one filter",
            f"one of {', '.join(_FILTERS)} (a status alone is enough)",
        )
    return JobFilter(
        statuses, flt.name, flt.tag, flt.correlation_key, **instants, tenant=flt.tenant
    )


def _text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(field, f"got {value!r}", "a str")
    return value


def _statuses(value: object, allowed: tuple[JobStatus, ...], verb: str) -> tuple[JobStatus, ...]:
    if value is None:
        return allowed
    items = [value] if isinstance(value, str | JobStatus) else value
    if not isinstance(items, Iterable):
        raise ValidationError("status", f"got {value!r}", "a status name or a list of them")
    out: list[JobStatus] = []
    names = {s.label: s for s in JobStatus}
    for item in items:
        status = item if isinstance(item, JobStatus) else names.get(str(item))
        if status is None or status not in allowed:
            raise ValidationError(
                "status",
                f"{item!r} is not a status {verb} takes",
                f"one of {', '.join(s.label for s in allowed)}",
            )
        out.append(status)
    if not out:
        raise ValidationError("status", "an empty list", "at least one status")
    return tuple(dict.fromkeys(out))
