"""The dashboard's reads: verbs over the ``dash_*`` statements of each dialect's dashboard.sql.

Every read is bounded (a LIMIT, a time window, or one group per definition) and runs on an
index, so a page costs the same on a ledger of any size: open jobs are counted up to
``COUNT_CAP``, finished ones only within ``WINDOW``. The overview's reads run in one
transaction, so its numbers agree with each other. Rows come back as plain dicts; the pages
and the JSON API shape them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from acta.provider.verb import Verb, fetch_all, fetch_one

Row = dict[str, Any]
WINDOW = timedelta(hours=1)
"""The overview's look back: throughput, failures, recently stopped workers."""
WORKERS_SHOWN = 100
BACKLOG_SHOWN = 100
COUNT_CAP = 10_000
"""Open jobs are counted exactly up to this many per status (and per definition in the
backlog); past it a count reads "10,000+". Each count walks at most this many index entries,
so the overview costs the same on a ledger of any size."""
TAG_SEPARATOR = "\x1f"
OPEN_STATUSES = ("ready", "blocked", "dispatched", "executing", "suspended", "paused")


@dataclass(frozen=True, slots=True)
class OverviewRows:
    """What the overview reads, at one instant of the database's clock (or the test clock)."""

    now: datetime
    since: datetime
    counts: dict[str, int]
    """Open jobs per status label, each at most ``COUNT_CAP`` (then read as "at least")."""
    backlog: list[Row]
    """One row per definition with ready jobs: job_name, jobs (ready), due, oldest_due_at;
    jobs and due at most ``COUNT_CAP``."""
    throughput: list[Row]
    workers: list[Row]


def database_now(now: datetime | None) -> Verb[datetime]:
    """The instant the ledger judges by: the test clock's, or the database's."""
    row = yield fetch_one("dash_now", {"now": now})
    assert row is not None
    value: datetime = row["now_at"]
    return value


def overview(namespace: str, now: datetime | None) -> Verb[OverviewRows]:
    at = yield from database_now(now)
    since = at - WINDOW
    # One entry past the cap tells "exactly the cap" from "more than the cap".
    counted = yield fetch_one("dash_job_counts", {"namespace": namespace, "cap": COUNT_CAP + 1})
    backlog = yield fetch_all(
        "dash_backlog",
        {"namespace": namespace, "now_at": at, "cap": COUNT_CAP + 1, "limit": BACKLOG_SHOWN},
    )
    throughput = yield fetch_all(
        "dash_throughput", {"namespace": namespace, "since": since, "now_at": at}
    )
    workers = yield from _workers(namespace, since)
    return OverviewRows(
        now=at,
        since=since,
        counts={s: int(counted[s]) if counted else 0 for s in OPEN_STATUSES},
        backlog=backlog,
        throughput=throughput,
        workers=workers,
    )


def workers(namespace: str, now: datetime | None) -> Verb[tuple[datetime, list[Row]]]:
    at = yield from database_now(now)
    rows = yield from _workers(namespace, at - WINDOW)
    return at, rows


def _workers(namespace: str, since: datetime) -> Verb[list[Row]]:
    rows: list[Row] = yield fetch_all(
        "dash_workers", {"namespace": namespace, "since": since, "limit": WORKERS_SHOWN}
    )
    return rows


def jobs(namespace: str, params: dict[str, Any]) -> Verb[list[Row]]:
    """One page of jobs; ``params`` come checked from ``acta.dashboard.filters``."""
    rows: list[Row] = yield fetch_all("dash_jobs", {"namespace": namespace, **params})
    for row in rows:
        tags = row["tags"]
        row["tags"] = sorted(tags.split(TAG_SEPARATOR)) if tags else []
    return rows


@dataclass(frozen=True, slots=True)
class JobExtras:
    """The job page's facts beyond the reader's ``JobInfo``."""

    view: Row | None
    steps: list[Row]
    variables: list[Row]


def job_extras(job_id: int) -> Verb[JobExtras]:
    view = yield fetch_one("dash_job_view", {"job_id": job_id})
    steps = yield fetch_all("dash_job_steps", {"job_id": job_id})
    variables = yield fetch_all("dash_job_variables", {"job_id": job_id})
    return JobExtras(view=view, steps=steps, variables=variables)


def definitions(namespace: str) -> Verb[list[Row]]:
    rows: list[Row] = yield fetch_all("dash_definitions", {"namespace": namespace})
    return rows


def namespaces() -> Verb[list[Row]]:
    rows: list[Row] = yield fetch_all("dash_namespaces", {})
    return rows


def tenants(after: str | None, limit: int) -> Verb[list[Row]]:
    """One page of tenants by key, after the key ``after`` (keyset); one more row than
    ``limit`` tells whether another page follows."""
    rows: list[Row] = yield fetch_all("dash_tenants", {"after": after, "limit": limit + 1})
    return rows


def schedule_firings(namespace: str) -> Verb[dict[tuple[str, str], Any]]:
    """Each schedule's last real firing (its slot's latest ``fired`` event), None if none."""
    rows: list[Row] = yield fetch_all("dash_schedule_firings", {"namespace": namespace})
    return {(r["job_name"], r["name"]): r["fired_at"] for r in rows}


def gates(namespace: str) -> Verb[dict[str, list[Row]]]:
    """Lanes, concurrency gates and rate meters of the namespace (at most 200 of each)."""
    params = {"namespace": namespace}
    lanes: list[Row] = yield fetch_all("dash_lanes", params)
    held: list[Row] = yield fetch_all("dash_gates", params)
    meters: list[Row] = yield fetch_all("dash_meters", params)
    return {"lanes": lanes, "gates": held, "meters": meters}
