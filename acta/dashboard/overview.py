"""The overview: what needs action now, in words, and the numbers behind it.

``shape_overview`` turns the overview's rows (``acta.dashboard.queries``) plus open alerts and
schedules into one JSON-ready dict that the page renders and ``/api/overview`` returns as is,
so the live refresh and the page can never disagree. The chart is drawn here, server-side, as
rectangles in SVG user units; the template only writes them out.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from acta.alerts import AlertInfo
from acta.dashboard.queries import COUNT_CAP
from acta.model.codes import WorkerStatus
from acta.ops.explanation import fact, span
from acta.schedules import ScheduleInfo

Data = dict[str, Any]
MINUTES = 60
CHART_W, CHART_H = 600, 120
STALE_BACKLOG = timedelta(minutes=5)
"""A due job waiting longer than this means the workers are not keeping up."""


def worker_rows(rows: list[Data], now: datetime) -> list[Data]:
    """Workers with their heartbeat age and a state in words."""
    out = []
    for row in rows:
        status = WorkerStatus(row["status"])
        age = now - row["heartbeat_at"]
        beat = timedelta(milliseconds=row["heartbeat_ms"])
        state = status.label
        if status is WorkerStatus.ACTIVE:
            state = "alive" if age <= 2 * beat else ("late" if age <= 7 * beat else "lost")
        out.append(
            {
                "incarnation": row["incarnation"],
                "host": row["host"],
                "pid": row["pid"],
                "status": status.label,
                "state": state,
                "executors": row["executors"],
                "jobs_held": int(row["jobs_held"]),
                "heartbeat_at": fact(row["heartbeat_at"]),
                "heartbeat_age": span(age),
                "heartbeat_age_seconds": round(max(age.total_seconds(), 0.0), 3),
                "started_at": fact(row["started_at"]),
                "stopped_at": fact(row["stopped_at"]),
            }
        )
    return out


def chart(throughput: list[Data]) -> Data:
    """Jobs finished per minute in the last hour (succeeded, failed), as SVG bars."""
    succeeded, failed, cancelled = [0] * MINUTES, [0] * MINUTES, [0] * MINUTES
    for row in throughput:
        # An event at exactly "now" ends the window: it belongs to the last minute.
        minute = min(int(row["minute"]), MINUTES - 1)
        if minute >= 0:
            succeeded[minute] += int(row["succeeded"] or 0)
            failed[minute] += int(row["failed"] or 0)
            cancelled[minute] += int(row["cancelled"] or 0)
    peak = max([1, *(s + f for s, f in zip(succeeded, failed, strict=True))])
    width = CHART_W / MINUTES
    bars = []
    for i, (ok, bad) in enumerate(zip(succeeded, failed, strict=True)):
        x = round(i * width + 1, 2)
        ok_h = round(ok / peak * (CHART_H - 4), 2)
        bad_h = round(bad / peak * (CHART_H - 4), 2)
        label = f"{MINUTES - i} min ago: {ok} succeeded, {bad} failed"
        bars.append(
            {
                "x": x,
                "w": round(width - 2, 2),
                "ok_y": round(CHART_H - ok_h, 2),
                "ok_h": ok_h,
                "bad_y": round(CHART_H - ok_h - bad_h, 2),
                "bad_h": bad_h,
                "label": label,
            }
        )
    return {
        "width": CHART_W,
        "height": CHART_H,
        "peak": peak,
        "succeeded": succeeded,
        "failed": failed,
        "cancelled": cancelled,
        "bars": bars,
    }


def verdict(
    counts: dict[str, int],
    backlog: list[Data],
    workers: list[Data],
    alerts: list[Data],
    failed_last_hour: int,
    now: datetime,
) -> Data:
    """The health verdict: ``ok``, ``attention`` or ``action``, and the reasons in words."""
    actions: list[str] = []
    notes: list[str] = []
    alive = [w for w in workers if w["state"] in ("alive", "late")]
    lost = [w for w in workers if w["state"] == "lost"]
    due = sum(int(b["due"]) for b in backlog)
    if alerts:
        actions.append(f"{len(alerts)} open alert{'s' if len(alerts) != 1 else ''} to look at.")
    if due and not alive:
        # A capped backlog row counts its due jobs only up to the cap: then say "at least".
        floor = "at least " if any("due" in b["capped"] for b in backlog) else ""
        actions.append(
            f"{floor}{due:,} job{'s are' if due != 1 else ' is'} due and no worker is alive."
        )
    if lost:
        actions.append(
            f"{len(lost)} worker{'s' if len(lost) != 1 else ''} stopped heartbeating; "
            "recovery takes their jobs back."
        )
    if failed_last_hour:
        notes.append(
            f"{failed_last_hour} job{'s' if failed_last_hour != 1 else ''} failed in the last hour."
        )
    stale = [
        b
        for b in backlog
        if b["oldest_due_at"] is not None
        and now - datetime.fromisoformat(b["oldest_due_at"].replace("Z", "+00:00")) > STALE_BACKLOG
    ]
    for b in stale[:3]:
        notes.append(f"{b['job_name']}: the oldest due job has waited {b['oldest_due_age']}.")
    if counts.get("paused"):
        notes.append(
            f"{counts['paused']} job{'s are' if counts['paused'] != 1 else ' is'} "
            "paused, waiting for an operator."
        )
    level = "action" if actions else ("attention" if notes else "ok")
    headline = {
        "action": "Needs action now.",
        "attention": "Running, with things to watch.",
        "ok": "All clear: nothing needs action.",
    }[level]
    return {"level": level, "headline": headline, "reasons": actions + notes}


def capped(n: int) -> tuple[int, bool]:
    """A count read with ``COUNT_CAP + 1`` as its limit: the count to show, and whether
    there are more than that."""
    return min(n, COUNT_CAP), n > COUNT_CAP


def shown(n: int, over: bool) -> str:
    """A count in words for the page: ``1,234``, or ``10,000+`` past the cap."""
    return f"{n:,}+" if over else f"{n:,}"


def backlog_row(b: Data, now: datetime) -> Data:
    ready, ready_over = capped(int(b["jobs"]))
    due, due_over = capped(int(b["due"] or 0))
    return {
        "job_name": b["job_name"],
        "ready": ready,
        "due": due,
        "capped": [name for name, over in (("ready", ready_over), ("due", due_over)) if over],
        "oldest_due_at": fact(b["oldest_due_at"]),
        "oldest_due_age": None if b["oldest_due_at"] is None else span(now - b["oldest_due_at"]),
    }


def shape_overview(rows: Any, alerts: list[AlertInfo], schedules: list[ScheduleInfo]) -> Data:
    now: datetime = rows.now
    drawn = chart(rows.throughput)
    # Open jobs are counted up to the cap; finished ones only within the chart's window, the
    # same numbers as the throughput line, so neither count grows with the history.
    counts: dict[str, int] = {}
    over_cap: list[str] = []
    for name, n in rows.counts.items():
        counts[name], over = capped(n)
        if over:
            over_cap.append(name)
    for name in ("succeeded", "failed", "cancelled"):
        counts[name] = sum(drawn[name])
    backlog = [backlog_row(b, now) for b in rows.backlog]
    # Names with a due job first, the longest waiting first; then the rest by name.
    backlog.sort(
        key=lambda b: (b["oldest_due_at"] is None, b["oldest_due_at"] or "", b["job_name"])
    )
    workers = worker_rows(rows.workers, now)
    open_alerts = [alert_row(a) for a in alerts]
    upcoming = sorted(
        (s for s in schedules if s.next_at is not None), key=lambda s: s.next_at or now
    )
    return {
        "now": fact(now),
        "verdict": verdict(counts, backlog, workers, open_alerts, sum(drawn["failed"]), now),
        "counts": counts,
        "counts_capped": over_cap,
        "count_cap": COUNT_CAP,
        "finished_since": fact(rows.since),
        "counts_shown": {name: shown(n, name in over_cap) for name, n in counts.items()},
        "backlog": backlog,
        "throughput": {
            "since": fact(rows.since),
            "succeeded": sum(drawn["succeeded"]),
            "failed": sum(drawn["failed"]),
            "cancelled": sum(drawn["cancelled"]),
        },
        "chart": drawn,
        "workers": workers,
        "alerts": open_alerts,
        "schedules": [schedule_row(s) for s in upcoming[:10]],
    }


def alert_row(a: AlertInfo) -> Data:
    return {
        "alert_id": a.alert_id,
        "kind": a.kind,
        "severity": a.severity,
        "title": a.title,
        "detail": a.detail,
        "job_name": a.job_name,
        "job_ref": a.job_ref,
        "occurrences": a.occurrences,
        "opened_at": fact(a.opened_at),
        "last_seen_at": fact(a.last_seen_at),
        "acknowledged_at": fact(a.acknowledged_at),
        "acknowledged_by": a.acknowledged_by,
        "resolved_at": fact(a.resolved_at),
        "resolved_by": a.resolved_by,
        "open": a.open,
    }


def schedule_row(s: ScheduleInfo) -> Data:
    return {
        "job_name": s.job_name,
        "name": s.name,
        "schedule": s.schedule.describe(),
        # A cron's own zone (None for an interval): the page shows its firings there too.
        "zone": s.schedule.zone if s.schedule.cron is not None else None,
        "overridden": s.overridden,
        "next_at": fact(s.next_at),
        "last_fired_at": fact(s.last_fired_at),
        "paused": s.paused,
        "paused_until": fact(s.paused_until),
        "slot_ref": s.slot_ref,
    }
