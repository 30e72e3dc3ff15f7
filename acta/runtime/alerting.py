"""sys.alerts: the recurring system job that resolves recovered incidents and notifies
channels of open alerts.

Each run, per namespace (one slot each, like recovery): resolve the failure incidents whose
definition succeeded since their last failure (and tell the channels so), then give every open,
unacknowledged alert that is owed a notice (new, its reminder due, or channels that failed last
time) to its routed channels. A channel that raises is caught and recorded in the
alert-notified event, and owed the notice next round; it never stops the other channels, the
other alerts, or any settle (incidents are written by settles, never by this job). Notices are
at least once: a run lost between a delivery and its record delivers again.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from functools import partial
from typing import Any

from acta.alerting import Alerting, Notice, alerting_of
from acta.alerting.notice import State, notice_of
from acta.context import JobContext
from acta.definition import JobDefinition
from acta.ledger import alerting as verbs
from acta.runtime.environment import RunEnv

log = logging.getLogger("acta.alerts")

ALERTS_JOB = "sys.alerts"
ACTOR = ALERTS_JOB
"""Who resolved an incident that recovered by itself."""


def alerts_available(env: RunEnv) -> bool:
    """Workers of applications that declared alerting run sys.alerts."""
    config = alerting_of(env.registry)
    return config is not None and config.enabled


def alerts_every(env: RunEnv) -> timedelta:
    config = alerting_of(env.registry)
    return config.check_every if config is not None else timedelta(minutes=1)


async def run_alerts(env: RunEnv, ctx: JobContext) -> None:
    config = alerting_of(env.registry)
    if config is None:
        return
    ledger, namespace = env.ledger, env.namespace
    resolved = await ledger.run_async(
        lambda: verbs.resolve_recovered(namespace, ACTOR, ledger.now()), name="alerts-resolve"
    )
    if ledger.telemetry is not None:
        ledger.telemetry.alerts_resolved(namespace, len(resolved))
    for alert_id in resolved:
        row = await ledger.run_async(partial(verbs.alert_row, namespace, alert_id), name="read")
        if row is not None:
            await _deliver(env, config, notice_of(row, "resolved"))
    due = await ledger.run_async(lambda: verbs.due_alerts(namespace, ledger.now()), name="read")
    remind_ms = config.remind_every // timedelta(milliseconds=1)
    for row in due:
        retry_only = not row["round_due"]
        state: State = "reminder" if row["next_reminder_at"] is not None else "open"
        owed: set[str] = set()
        if retry_only:  # only the channels that failed the last notice are owed it
            state, owed = _pending(row["pending_channels"])
        notice = notice_of(row, state)
        targets = config.channels_for(notice)
        if retry_only:
            targets = [name for name in targets if name in owed]
        delivered, failed = await _deliver_to(env, config, notice, targets)
        remind = None if retry_only else remind_ms
        record = partial(verbs.mark_notified, row, state, delivered, failed, remind, ledger.now())
        await ledger.run_async(record, name="alerts-notified")


async def _deliver(env: RunEnv, config: Alerting, notice: Notice) -> None:
    _, failed = await _deliver_to(env, config, notice, config.channels_for(notice))
    if failed:  # a resolution notice is not retried: the alert is closed
        log.warning("alert %d: resolution notice failed on %s", notice.alert_id, sorted(failed))


async def _deliver_to(
    env: RunEnv, config: Alerting, notice: Notice, targets: list[str]
) -> tuple[list[str], dict[str, str]]:
    delivered: list[str] = []
    failed: dict[str, str] = {}

    async def enqueue(definition: JobDefinition[Any, Any], payload: dict[str, Any]) -> object:
        return await env.registry.enqueue_async(definition, payload)

    for name in targets:
        channel = config.channels[name]
        try:
            await channel.deliver(notice, enqueue)
        except Exception as exc:  # a channel's failure is recorded, never raised
            failed[name] = f"{type(exc).__name__}: {exc}"
            log.warning("alert %d: channel %r failed: %s", notice.alert_id, name, exc)
        else:
            delivered.append(name)
        if env.ledger.telemetry is not None:
            took = name not in failed
            env.ledger.telemetry.alert_notice(env.namespace, name, notice.state, took)
    return delivered, failed


def _pending(text: str | None) -> tuple[State, set[str]]:
    """The notice failed channels are owed, and those channels (see mark_notified)."""
    owed = json.loads(text) if text else {}
    state: State = "open" if owed.get("notice") == "open" else "reminder"
    return state, {n for n in owed.get("channels", ()) if isinstance(n, str)}
