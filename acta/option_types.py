"""The types of enqueue's keyword options, for every call that enqueues: ``enqueue`` and
``request`` (``acta.options``) and a handler's ``ctx.spawn``/``spawn_many``.

A primitive module (it imports nothing of acta), so the job context can name the options too.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Literal, TypedDict

Duration = str | float | timedelta
"""A duration in the one form every acta call takes: ``"1h30m"``, seconds as a number, or a
``timedelta``."""


class EnqueueOptions(TypedDict, total=False):
    """The options of one enqueue: ``enqueue``, ``request``, ``ctx.spawn`` and their twins."""

    delay: Duration | None
    not_before: datetime | None
    priority: int | None
    dedup_key: str | None
    dedup_mode: Literal["forever", "unfinished", "window"]
    dedup_window: Duration
    correlation_key: str | None
    tags: Iterable[str]
    lane: str | None
    concurrency_key: str | None
    deadline: datetime | Duration | None
    deadline_policy: Literal["strict", "advisory"]
    tenant: str | None
