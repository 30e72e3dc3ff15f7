"""The keyword options of the front door, as typed dicts: ``@app.job(...)``/``app.define``
(``JobOptions``) and ``enqueue``/``request`` and their twins (``EnqueueOptions``).

The calls take ``**options: Unpack[...]``, so a type checker checks each option's type and an
editor completes the names; ``check_options`` refuses a name that is not one of them at run
time, naming it and the allowed ones (an ``UnknownOptionError``, a ``TypeError`` as Python
raises for a bad keyword and a ``ValidationError`` as acta raises for bad input).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from difflib import get_close_matches
from typing import Literal, TypedDict

from acta.backoff import Backoff
from acta.errors import UnknownOptionError
from acta.model.codes import AuditLevel
from acta.option_types import Duration, EnqueueOptions
from acta.policy.gate import Rate
from acta.policy.job import AlertProfile
from acta.policy.schedule import Schedule

__all__ = [
    "ENQUEUE_OPTIONS",
    "JOB_OPTIONS",
    "Duration",
    "EnqueueOptions",
    "JobOptions",
    "ScheduleLike",
    "check_options",
]

ScheduleLike = str | timedelta | Schedule
"""A schedule: an interval (``"5m"``, a ``timedelta``), a cron string (``"0 3 * * *"``,
``"@daily"``) or a ``Schedule``."""


class JobOptions(TypedDict, total=False):
    """The policy options of ``@app.job(name, ...)`` and ``app.define(name, ...)``."""

    max_attempts: int
    backoff: str | Backoff
    timeout: Duration | None
    priority: int
    audit: Literal["full", "failures", "off"] | AuditLevel
    lane: str | None
    concurrency_limit: int | None
    rate_limit: str | Rate | None
    rate_key: str | None
    schedule: ScheduleLike | None
    schedules: Mapping[str, ScheduleLike] | None
    retention: Duration | None
    alerts: Literal["terminal", "all", "off"] | AlertProfile
    tenant: Literal["required", "forbidden"] | None
    definition_tags: Iterable[str]


JOB_OPTIONS: frozenset[str] = frozenset(JobOptions.__annotations__)
ENQUEUE_OPTIONS: frozenset[str] = frozenset(EnqueueOptions.__annotations__)


def check_options(given: Iterable[str], allowed: frozenset[str], call: str) -> None:
    """Refuse an option name ``call`` does not take, naming it, the nearest allowed name (a
    likely typo) and all of them."""
    for name in given:
        if name in allowed:
            continue
        near = get_close_matches(name, allowed, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise UnknownOptionError(
            name,
            f"{call}() takes no option {name!r}{hint}",
            "options: " + ", ".join(sorted(allowed)),
        )
