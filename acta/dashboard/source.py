"""Where every page's data comes from: acta's reader and operator surface (``app.get``,
``app.events``, ``app.ops``...) plus the dashboard's own bounded reads, shaped into JSON-ready
dicts. A page and its ``/api/...`` endpoint render the same dict, so they always agree.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from acta.codec import codecs
from acta.dashboard import queries, timefmt
from acta.dashboard.filters import JobFilter
from acta.dashboard.overview import Data, alert_row, schedule_row, shape_overview, worker_rows
from acta.errors import ActaError
from acta.model.codes import JobStatus
from acta.ops.explanation import fact

if TYPE_CHECKING:
    from acta.app import Acta

SHOWN_CHARS = 20_000
"""Inputs, results and variables are cut to this many characters on a page."""


def shown(value: object) -> str:
    """A stored value as indented JSON text for a page, cut to SHOWN_CHARS."""
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=repr, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > SHOWN_CHARS:
        return text[:SHOWN_CHARS] + f"\n… ({len(text) - SHOWN_CHARS} more characters)"
    return text


def _decoded(code: int, body: bytes | None) -> str | None:
    if body is None:
        return None
    try:
        return shown(codecs.by_code(code).decode(bytes(body)))
    except Exception as exc:  # a stored value we cannot read is shown as such, not a 500
        return f"(cannot decode {len(body)} bytes with codec {code}: {exc})"


def _first_line(text: str | None, limit: int = 160) -> str | None:
    """A failure message for a list's cell: its first line, cut to ``limit`` characters."""
    if not text:
        return None
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Source:
    """The dashboard's reads for one application."""

    def __init__(self, app: Acta) -> None:
        self.app = app

    @property
    def namespace(self) -> str:
        return self.app.namespace

    def _run(self, make: Any) -> Any:
        return self.app.ledger.run(make, name="dashboard")

    def overview(self) -> Data:
        ledger, ns = self.app.ledger, self.namespace
        rows = self._run(lambda: queries.overview(ns, ledger.now()))
        alerts = self.app.ops.alerts.list(limit=50)
        schedules = self.app.ops.schedules.list()
        return shape_overview(rows, alerts, schedules)

    def jobs(self, chosen: JobFilter) -> Data:
        params, ns = chosen.params(), self.namespace
        rows = self._run(lambda: queries.jobs(ns, params))
        more = len(rows) > chosen.limit
        rows = rows[: chosen.limit]
        return {
            "jobs": [
                {
                    "job_ref": r["job_ref"],
                    "job_name": r["job_name"],
                    "status": JobStatus(r["status"]).label,
                    "attempts": r["attempts"],
                    "max_attempts": r["max_attempts"],
                    "created_at": fact(r["created_at"]),
                    "next_run_at": fact(r["next_run_at"]),
                    "updated_at": fact(r["updated_at"]),
                    "finished_at": fact(r["finished_at"]),
                    "lane": r["lane"],
                    "is_slot": bool(r["is_slot"]),
                    "last_error": _first_line(r["last_error"]),
                    "correlation_key": r["correlation_key"],
                    "tenant": r["tenant"],
                    "tags": r["tags"],
                }
                for r in rows
            ],
            "next_before": rows[-1]["job_id"] if more and rows else None,
            "filter": chosen.query(),
        }

    def job(self, ref: str) -> Data:
        """Raises the reader's errors for a bad or unknown ref (the caller answers 404)."""
        info = self.app.get(ref)
        events = self.app.events(ref)
        extras = self._run(lambda: queries.job_extras(info.job_id))
        try:
            result = shown(self.app.result(ref))
        except ActaError as exc:
            result = f"(cannot read the result: {exc})"
        explained = self.app.ops.explain(ref).to_data()
        view = extras.view or {}
        return {
            "job_ref": info.job_ref,
            "job_name": info.name,
            "status": info.status.label,
            "terminal": info.status.terminal,
            "priority": info.priority,
            "attempts": info.attempts,
            "max_attempts": info.max_attempts,
            "executions": info.executions,
            "created_at": fact(info.created_at),
            "next_run_at": fact(info.next_run_at),
            "updated_at": fact(info.updated_at),
            "finished_at": fact(view.get("finished_at")),
            "lease_worker": view.get("lease_worker"),
            "lease_expires_at": fact(info.lease_expires_at),
            "cancel_requested": info.cancel_requested,
            "correlation_key": info.correlation_key,
            "tenant": info.tenant,
            "dedup_key": info.dedup_key,
            "tags": list(info.tags),
            "lane": info.lane,
            "concurrency_key": info.concurrency_key,
            "parent_ref": info.parent_ref,
            "root_ref": info.root_ref,
            "last_error": view.get("last_error"),
            "last_error_reason": view.get("last_error_reason"),
            "waiting_for": view.get("waiting_for"),
            "progress": None
            if view.get("progress_done") is None
            else {
                "done": view["progress_done"],
                "total": view["progress_total"],
                "message": view["progress_message"],
                "at": fact(view["progress_at"]),
            },
            "input": _decoded(info.input_codec, info.input),
            "result": result,
            "explain": explained,
            "events": [
                {
                    "event_id": e.event_id,
                    "at": fact(e.at),
                    "event": e.code.label,
                    "execution": e.execution,
                    "outcome": None if e.outcome is None else e.outcome.label,
                    "reason": None if e.reason is None else e.reason.label,
                    "duration_ms": e.duration_ms,
                    "message": e.message,
                    "detail": e.detail,
                    "worker": e.worker,
                    "actor": e.actor,
                }
                for e in events
            ],
            "steps": [
                {
                    **s,
                    "started_at": fact(s["started_at"]),
                    "completed_at": fact(s["completed_at"]),
                    "at_most_once": bool(s["at_most_once"]),
                }
                for s in extras.steps
            ],
            "variables": [
                {
                    "name": v["name"],
                    "value": _decoded(v["codec"], v["body"]),
                    "updated_at": fact(v["updated_at"]),
                }
                for v in extras.variables
            ],
        }

    def workers(self) -> Data:
        ledger, ns = self.app.ledger, self.namespace
        now, rows = self._run(lambda: queries.workers(ns, ledger.now()))
        return {"now": fact(now), "workers": worker_rows(rows, now)}

    def alerts(self, include_resolved: bool) -> Data:
        found = self.app.ops.alerts.list(include_resolved=include_resolved, limit=200)
        return {"alerts": [alert_row(a) for a in found], "include_resolved": include_resolved}

    def definitions(self) -> Data:
        ns = self.namespace
        rows = self._run(lambda: queries.definitions(ns))
        by_job: dict[str, list[str]] = {}
        for info in self.app.ops.schedules.list():
            by_job.setdefault(info.job_name, []).append(info.schedule.describe())
        return {
            "definitions": [
                {
                    **r,
                    "paused": bool(r["paused"]),
                    "retired": bool(r["retired"]),
                    "updated_at": fact(r["updated_at"]),
                    "overrides": None if r["overrides"] is None else json.loads(r["overrides"]),
                    "system": str(r["job_name"]).startswith("sys."),
                    "schedules": by_job.get(str(r["job_name"]), []),
                }
                for r in rows
            ]
        }

    def schedules(self) -> Data:
        """Every schedule; ``last_fired_at`` is its last real firing (None: never fired), not
        the cursor, which holds the arming instant until the first firing."""
        ns = self.namespace
        fired = self._run(lambda: queries.schedule_firings(ns))
        rows = [schedule_row(s) for s in self.app.ops.schedules.list()]
        for row in rows:
            row["last_fired_at"] = fact(fired.get((row["job_name"], row["name"])))
        return {"schedules": rows}

    def gates(self) -> Data:
        """Lanes (head, jobs blocked behind it), concurrency gates (held of limit, holders)
        and meters (rate per period, next free admission)."""
        ns = self.namespace
        rows = self._run(lambda: queries.gates(ns))
        return {
            "lanes": [{**r, "blocked": int(r["blocked"])} for r in rows["lanes"]],
            "gates": [
                {**r, "holders": json.loads(r["holders"]) if r["holders"] else []}
                for r in rows["gates"]
            ],
            "meters": [
                {
                    **r,
                    # SQLite hands these two back as text: read both as instants.
                    "next_free_at": fact(timefmt.parse(r["next_free_at"])),
                    "admitted_until": fact(timefmt.parse(r["admitted_until"])),
                }
                for r in rows["meters"]
            ],
        }

    def namespaces(self) -> Data:
        rows = self._run(queries.namespaces)
        return {
            "current": self.namespace,
            "namespaces": [
                {
                    "name": r["name"],
                    "paused": bool(r["paused"]),
                    "created_at": fact(r["created_at"]),
                    "definitions": int(r["definitions"]),
                    "workers": int(r["workers"]),
                }
                for r in rows
            ],
        }

    def tenants(self, after: str | None, limit: int) -> Data:
        """One page of tenants by key (tenants are the ledger's, not one namespace's)."""
        rows = self._run(lambda: queries.tenants(after, limit))
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "tenants": [
                {
                    "key": r["tenant"],
                    "suspended": bool(r["suspended"]),
                    "suspended_at": fact(r["suspended_at"]),
                    "suspended_by": r["suspended_by"],
                    "suspend_reason": r["suspend_reason"],
                    "tags": list(_json(r["tags"])),
                    "metadata": dict(_json(r["metadata"])),
                    "open_jobs": int(r["open_jobs"]),
                    "version": int(r["version"]),
                    "created_at": fact(r["created_at"]),
                    "updated_at": fact(r["updated_at"]),
                }
                for r in rows
            ],
            "next_after": rows[-1]["tenant"] if more and rows else None,
            "limit": limit,
        }


def _json(value: Any) -> Any:
    """A JSON column: text on SQLite, already decoded (jsonb) on PostgreSQL."""
    return json.loads(value) if isinstance(value, (str, bytes)) else value
