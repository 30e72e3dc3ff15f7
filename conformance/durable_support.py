"""Shared by the durable-execution specs: reading a job's steps, variables and other durable
rows the way an operator would (through ``ledger``), counting how often a body ran, and
driving a handler whose step retries back off on the worker's (manual) clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from acta import JobRef
from acta_testing import AsyncHost, TickOutcome
from conformance.conftest import Ledger

DURABLE_TABLES = ("steps", "variables", "progress", "waits", "signals")
"""The tables a durable call may write; equal counts before and after mean it wrote nothing."""


def durable_counts(ledger: Ledger) -> dict[str, int]:
    """Row counts of every table a durable call may write, and the user jobs (a spawn makes
    jobs; acta's own recovery slot appears when the first worker registers, so not those)."""
    counts = {
        table: int(ledger.value(f"SELECT count(*) FROM {{schema}}.{table}"))
        for table in DURABLE_TABLES
    }
    counts["user jobs"] = ledger.user_jobs()
    return counts


def steps_of(ledger: Ledger, ref: JobRef | str) -> list[tuple[str, str, bool, int]]:
    """The job's steps as steps_view shows them: (step, state, at_most_once, execution)."""
    rows = ledger.rows(
        "SELECT step, state, at_most_once, execution FROM {schema}.steps_view "
        "WHERE job_ref = :ref ORDER BY step",
        {"ref": str(ref)},
    )
    return [(step, state, bool(amo), execution) for step, state, amo, execution in rows]


def variables_of(ledger: Ledger, ref: JobRef | str) -> list[str]:
    """The names of the job's stored variables, sorted."""
    rows = ledger.rows(
        "SELECT v.name FROM {schema}.variables v JOIN {schema}.jobs j ON j.id = v.job_id "
        "WHERE j.job_ref = :ref ORDER BY v.name",
        {"ref": str(ref)},
    )
    return [name for (name,) in rows]


def last_error(ledger: Ledger, ref: JobRef | str) -> tuple[str | None, str | None]:
    """(last_error, last_error_reason) of the job, from jobs_view."""
    [row] = ledger.rows(
        "SELECT last_error, last_error_reason FROM {schema}.jobs_view WHERE job_ref = :ref",
        {"ref": str(ref)},
    )
    return row[0], row[1]


class Calls:
    """Counts the calls of a step body; ``body(value)`` makes one that returns ``value``."""

    def __init__(self) -> None:
        self.count = 0

    def body(self, value: Any) -> Callable[[], Any]:
        def run() -> Any:
            self.count += 1
            return value

        return run


async def tick_through_backoffs(
    host: AsyncHost, failed: asyncio.Event, pause: timedelta, pauses: int
) -> TickOutcome:
    """One tick of a handler whose step body fails ``pauses`` times before the step is done.

    The body sets ``failed`` as it raises; by the time this task runs again the step is asleep
    on the worker's clock (nothing awaits between the raise and the sleep), so moving the
    clock by ``pause`` wakes it. Stops waiting early if the tick ends on its own."""
    tick = asyncio.ensure_future(host.tick())
    for _ in range(pauses):
        await _first(failed.wait(), tick)
        if tick.done():
            break
        failed.clear()
        await host.advance(pause)
    return await tick


async def _first(waiting: Awaitable[Any], tick: asyncio.Future[TickOutcome]) -> None:
    waiter = asyncio.ensure_future(waiting)
    try:
        await asyncio.wait({waiter, tick}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
