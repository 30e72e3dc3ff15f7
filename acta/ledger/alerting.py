"""Alert verbs: failure incidents opened by settles, and what sys.alerts and operators do to
alerts afterwards (notify, resolve, acknowledge).

A failure incident is one row per (namespace, definition, reason class) while it is open: the
settle that fails a job joins it (``record_failure``, in the settle's transaction) instead of
writing a row per failure. Every change of an alert writes an alert event in its own
transaction; those events carry no job (an incident belongs to the namespace, not to the one
job that happened to fail last), so a job's timeline is the same with alerting as without.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from acta.ledger.doubt import event_probe
from acta.ledger.events import event_params
from acta.model.codes import AlertSeverity, EventCode
from acta.model.rows import Transition
from acta.provider.verb import Op, Verb, execute, fetch_all, fetch_one

DUE_BATCH = 100
"""Alerts one sys.alerts round notifies; the rest wait for the next round."""


def record_failure(plan: Transition, now: datetime | None) -> Verb[int | None]:
    """Open the incident of the failure ``plan`` reports, or join the open one. Runs inside
    the settle's transaction, after its guard held. Returns the incident's id."""
    cause = plan.alert
    if cause is None:
        return None
    severity = AlertSeverity.CRITICAL if cause.final else AlertSeverity.WARNING
    row = yield fetch_one(
        "incident_upsert",
        {
            "now": now,
            "job_id": plan.job_id,
            "severity": int(severity),
            "reason": int(cause.reason),
            "reason_label": cause.reason.label,
            "detail": cause.error,
        },
    )
    if row is None:  # the job row is gone (cannot happen under the settle's guard)
        return None
    if row["occurrences"] == 1:  # this failure opened it: the one event of the incident
        yield execute(
            "insert_event",
            event_params(
                now,
                plan.namespace_id,
                None,
                None,
                EventCode.ALERT_OPENED,
                reason=int(cause.reason),
                message=f"alert {row['alert_id']}: {row['title']}",
                detail=cause.error,
            ),
        )
    return int(row["alert_id"])


def _alert_event(
    now: datetime | None,
    namespace_id: int,
    code: EventCode,
    message: str,
    actor: str | None = None,
) -> dict[str, object]:
    return event_params(now, namespace_id, None, None, code, message=message, actor=actor)


def resolve_recovered(namespace: str, actor: str, now: datetime | None) -> Verb[list[int]]:
    """Resolve the namespace's open failure incidents whose definition succeeded since their
    last failure. Checked by sys.alerts each round rather than by every successful settle:
    a success then costs nothing, and an incident stays open at most one round longer."""
    rows = yield fetch_all(
        "incidents_recovered", {"now": now, "namespace": namespace, "actor": actor}
    )
    for row in rows:
        message = f"alert {row['alert_id']} resolved by {actor}: the job succeeded again"
        yield execute(
            "insert_event",
            _alert_event(now, row["namespace_id"], EventCode.ALERT_RESOLVED, message, actor),
        )
    return [int(row["alert_id"]) for row in rows]


def due_alerts(namespace: str, now: datetime | None) -> Verb[list[dict[str, Any]]]:
    """Open, unacknowledged alerts owed a notice (new, reminder due, or failed channels)."""
    rows = yield fetch_all("alerts_due", {"now": now, "namespace": namespace, "limit": DUE_BATCH})
    return [dict(row) for row in rows]


def mark_notified(
    alert: Mapping[str, Any],
    state: str,
    delivered: Sequence[str],
    failed: Mapping[str, str],
    remind_ms: int | None,
    now: datetime | None,
) -> Verb[bool]:
    """Record one notice (``state``) of ``alert``: the channels it reached, the ones that
    failed (owed the notice next round, with their errors in the event). ``remind_ms`` None
    keeps the reminder (a retry of failed channels only). False if the alert was resolved
    meanwhile."""
    # What the failed channels are owed: this notice (its state too, so a retry of a first
    # notice still says "open").
    pending = json.dumps({"notice": state, "channels": sorted(failed)}) if failed else None
    changed = yield execute(
        "alert_notified",
        {"now": now, "alert_id": alert["alert_id"], "remind_ms": remind_ms, "pending": pending},
    )
    if not changed:
        return False
    parts = [f"alert {alert['alert_id']} notified"]
    parts.append(f"via {', '.join(delivered)}" if delivered else "via no channel")
    if failed:
        parts.append("failed: " + "; ".join(f"{name}: {err}" for name, err in failed.items()))
    yield execute(
        "insert_event",
        _alert_event(now, alert["namespace_id"], EventCode.ALERT_NOTIFIED, "; ".join(parts)),
    )
    return True


def alert_row(namespace: str, alert_id: int) -> Verb[dict[str, Any] | None]:
    row = yield fetch_one("alert_by_id", {"namespace": namespace, "alert_id": alert_id})
    return None if row is None else dict(row)


def list_alerts(namespace: str, everything: bool, limit: int) -> Verb[list[dict[str, Any]]]:
    rows = yield fetch_all(
        "alerts_list",
        {"namespace": namespace, "everything": 1 if everything else 0, "limit": limit},
    )
    return [dict(row) for row in rows]


def change_alert(
    namespace: str, alert_id: int, verb: str, actor: str, reason: str, now: datetime | None
) -> Verb[tuple[tuple[bool, dict[str, Any] | None], Op | None]]:
    """An operator's acknowledge or resolve: (changed, the alert as it is now). Not changed
    when the alert is missing (None) or already in the state asked for. With the probe of its
    event, for ``acta.ledger.doubt.once``."""
    statement, code = {
        "acknowledge": ("alert_acknowledge", EventCode.ALERT_ACKNOWLEDGED),
        "resolve": ("alert_resolve", EventCode.ALERT_RESOLVED),
    }[verb]
    row = yield fetch_one(
        statement, {"now": now, "namespace": namespace, "alert_id": alert_id, "actor": actor}
    )
    probe = None
    if row is not None:
        past = "acknowledged" if verb == "acknowledge" else "resolved"
        message = f"alert {alert_id} {past} by {actor}: {reason}"
        event = yield fetch_one(
            "insert_event_id", _alert_event(now, row["namespace_id"], code, message, actor)
        )
        probe = event_probe(event["id"], int(code))
    after = yield from alert_row(namespace, alert_id)
    return (row is not None, after), probe
