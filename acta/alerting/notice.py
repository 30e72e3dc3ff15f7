"""A notice: what one alert tells a channel, built from its alerts_view row.

Channels receive a frozen ``Notice`` (and a webhook its JSON form, ``as_json``); ``state`` says
why it is sent: a new alert, a reminder of one still open, or its resolution.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

State = Literal["open", "reminder", "resolved"]


@dataclass(frozen=True, slots=True)
class Notice:
    """One alert as a channel sees it."""

    alert_id: int
    namespace: str
    state: State
    kind: str
    """``failure`` (an incident a failing definition opened) or ``manual`` (ctx.alert)."""
    severity: str
    title: str
    detail: str | None
    job_name: str | None
    job_ref: str | None
    """The last job of the incident (the job that alerted, for a manual alert)."""
    reason_class: str | None
    occurrences: int
    first_seen_at: datetime
    last_seen_at: datetime

    @property
    def text(self) -> str:
        """One line for a log or a chat message."""
        head = {"open": "ALERT", "reminder": "STILL OPEN", "resolved": "RESOLVED"}[self.state]
        seen = f" ({self.occurrences} times)" if self.occurrences > 1 else ""
        return f"[{head}] {self.severity}: {self.title}{seen} [alert {self.alert_id}]"

    def as_json(self) -> dict[str, Any]:
        """The notice as a JSON object (instants in ISO 8601, UTC)."""
        out = asdict(self)
        out["first_seen_at"] = _iso(self.first_seen_at)
        out["last_seen_at"] = _iso(self.last_seen_at)
        return out


def notice_of(row: Mapping[str, Any], state: State) -> Notice:
    """The notice of an alerts_view row."""
    return Notice(
        alert_id=int(row["alert_id"]),
        namespace=row["namespace"],
        state=state,
        kind=row["kind"],
        severity=row["severity"],
        title=row["title"],
        detail=row["detail"],
        job_name=row["job_name"],
        job_ref=row["job_ref"],
        reason_class=row["reason_class"],
        occurrences=int(row["occurrences"]),
        first_seen_at=instant_of(row["first_seen_at"]),
        last_seen_at=instant_of(row["last_seen_at"]),
    )


def instant_of(value: Any) -> datetime:
    """An instant column's value, aware (SQLite rows may hold text)."""
    if isinstance(value, str):  # SQLite hands back text
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise TypeError(f"expected an instant, got {value!r}")
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()
