"""The backlog gauge's read: due, unclaimed jobs of one namespace by job name.

A ledger verb like any other (``acta.provider.verb``), run by the application at each metrics
collection when it opted in (``Telemetry(backlog=True)``), never on a job's path.
"""

from __future__ import annotations

from datetime import datetime

from acta.provider.verb import Verb, fetch_all


def backlog(namespace: str, now: datetime | None) -> Verb[dict[str, int]]:
    """How many jobs of each name in ``namespace`` are due and wait for a worker."""
    rows = yield fetch_all("backlog", {"namespace": namespace, "now": now})
    return {row["name"]: int(row["waiting"]) for row in rows}
