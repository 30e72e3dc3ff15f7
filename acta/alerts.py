"""The operator surface of alerts: list, get, acknowledge, resolve (``app.alerts``).

Alerts are failure incidents (opened by the settles that fail jobs, one per definition and
reason class while open) and manual alerts (``ctx.alert``). Arguments are checked before any
statement runs; each change is one transaction that writes an alert event naming the actor and
the reason. Acknowledging stops reminders; resolving closes the alert (a failure that comes
after opens a new incident). A verb on an alert already in the state asked for changes nothing
and raises ConflictError, so two operators never both believe they acted. Sync and async twins
run the same verbs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from acta.errors import ActaError, ConflictError, ValidationError
from acta.ids import ROW_ID_MAX
from acta.ledger import alerting as verbs
from acta.ledger.doubt import once
from acta.ledger.facade import Ledger
from acta.names import validate_text
from acta.provider.verb import Verb

T = TypeVar("T")
TEXT_MAX = 1000
"""The longest actor name or reason, in characters."""
LIST_MAX = 10_000


class AlertNotFoundError(ActaError, LookupError):
    """No alert with that id in this namespace."""


@dataclass(frozen=True, slots=True)
class AlertInfo:
    """One alert as alerts_view shows it."""

    alert_id: int
    kind: str
    severity: str
    title: str
    detail: str | None
    job_name: str | None
    job_ref: str | None
    reason_class: str | None
    occurrences: int
    opened_at: datetime
    first_seen_at: datetime
    last_seen_at: datetime
    acknowledged_at: datetime | None
    acknowledged_by: str | None
    resolved_at: datetime | None
    resolved_by: str | None
    next_reminder_at: datetime | None
    last_notified_at: datetime | None

    @property
    def open(self) -> bool:
        return self.resolved_at is None


def _instant(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _info(row: Mapping[str, Any]) -> AlertInfo:
    def at(name: str) -> datetime:
        value = _instant(row[name])
        assert value is not None
        return value

    return AlertInfo(
        alert_id=int(row["alert_id"]),
        kind=row["kind"],
        severity=row["severity"],
        title=row["title"],
        detail=row["detail"],
        job_name=row["job_name"],
        job_ref=row["job_ref"],
        reason_class=row["reason_class"],
        occurrences=int(row["occurrences"]),
        opened_at=at("opened_at"),
        first_seen_at=at("first_seen_at"),
        last_seen_at=at("last_seen_at"),
        acknowledged_at=_instant(row["acknowledged_at"]),
        acknowledged_by=row["acknowledged_by"],
        resolved_at=_instant(row["resolved_at"]),
        resolved_by=row["resolved_by"],
        next_reminder_at=_instant(row["next_reminder_at"]),
        last_notified_at=_instant(row["last_notified_at"]),
    )


def _alert_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ROW_ID_MAX:
        raise ValidationError(
            "alert_id", f"got {value!r:.80}", "a positive int (alerts_view.alert_id)"
        )
    return value


def _limit(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LIST_MAX:
        raise ValidationError("limit", f"got {value!r}", f"an int from 1 to {LIST_MAX}")
    return value


Change = tuple[bool, dict[str, Any] | None]
AlertList = list[AlertInfo]
Rows = list[dict[str, Any]]


class Alerts:
    """Alerts of one namespace of the ledger ``ledger()`` returns."""

    def __init__(self, ledger: Callable[[], Ledger], namespace: str) -> None:
        self._ledger = ledger
        self.namespace = namespace

    def _run(self, make: Callable[[], Verb[T]], name: str) -> T:
        return self._ledger().run(make, name=name)

    async def _run_async(self, make: Callable[[], Verb[T]], name: str) -> T:
        return await self._ledger().run_async(make, name=name)

    # -- reading --------------------------------------------------------------------------

    def list(self, *, include_resolved: bool = False, limit: int = 100) -> AlertList:
        """Open alerts, newest first (resolved ones too with ``include_resolved``)."""
        make = self._list_verb(include_resolved, limit)
        return [_info(r) for r in self._run(make, "read")]

    async def list_async(self, *, include_resolved: bool = False, limit: int = 100) -> AlertList:
        make = self._list_verb(include_resolved, limit)
        return [_info(r) for r in await self._run_async(make, "read")]

    def _list_verb(self, everything: bool, limit: int) -> Callable[[], Verb[Rows]]:
        ns, n = self.namespace, _limit(limit)
        return lambda: verbs.list_alerts(ns, bool(everything), n)

    def get(self, alert_id: int) -> AlertInfo:
        """One alert; AlertNotFoundError if this namespace has none by that id."""
        ns, key = self.namespace, _alert_id(alert_id)
        return self._found(self._run(lambda: verbs.alert_row(ns, key), "read"), key)

    async def get_async(self, alert_id: int) -> AlertInfo:
        ns, key = self.namespace, _alert_id(alert_id)
        return self._found(await self._run_async(lambda: verbs.alert_row(ns, key), "read"), key)

    def _found(self, row: Mapping[str, Any] | None, alert_id: int) -> AlertInfo:
        if row is None:
            raise AlertNotFoundError(f"no alert {alert_id} in namespace {self.namespace!r}")
        return _info(row)

    # -- changing -------------------------------------------------------------------------

    def acknowledge(self, alert_id: int, *, by: str, reason: str = "acknowledged") -> AlertInfo:
        """Someone is on it: no more reminders (the alert stays open until resolved)."""
        make = self._change_verb(alert_id, "acknowledge", by, reason)
        return self._after(self._run(make, "alert-acknowledge"), alert_id, "acknowledge")

    async def acknowledge_async(
        self, alert_id: int, *, by: str, reason: str = "acknowledged"
    ) -> AlertInfo:
        make = self._change_verb(alert_id, "acknowledge", by, reason)
        return self._after(
            await self._run_async(make, "alert-acknowledge"), alert_id, "acknowledge"
        )

    def resolve(self, alert_id: int, *, by: str, reason: str = "resolved") -> AlertInfo:
        """Close the alert; the next failure of the same kind opens a new incident."""
        make = self._change_verb(alert_id, "resolve", by, reason)
        return self._after(self._run(make, "alert-resolve"), alert_id, "resolve")

    async def resolve_async(self, alert_id: int, *, by: str, reason: str = "resolved") -> AlertInfo:
        make = self._change_verb(alert_id, "resolve", by, reason)
        return self._after(await self._run_async(make, "alert-resolve"), alert_id, "resolve")

    def _change_verb(
        self, alert_id: int, verb: str, by: str, reason: str
    ) -> Callable[[], Verb[Change]]:
        key = _alert_id(alert_id)
        actor = validate_text(by, field="by", max_length=TEXT_MAX)
        why = validate_text(reason, field="reason", max_length=TEXT_MAX)
        ns, ledger = self.namespace, self._ledger()
        # One memory per call: a retry after a lost COMMIT reply answers as the first attempt.
        return once(verbs.change_alert, ns, key, verb, actor, why, ledger.now())

    def _after(self, change: Change, alert_id: int, verb: str) -> AlertInfo:
        changed, row = change
        info = self._found(row, alert_id)
        if changed:
            return info
        if info.resolved_at is not None:
            raise ConflictError(
                f"alert {alert_id} was already resolved by {info.resolved_by} at "
                f"{info.resolved_at.isoformat()}; nothing changed"
            )
        raise ConflictError(
            f"alert {alert_id} was already acknowledged by {info.acknowledged_by}; "
            f"nothing changed (cannot {verb} it again)"
        )
