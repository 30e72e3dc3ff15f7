"""Notes and alerts: the handler's own words for operators. ``ctx.note(text)`` appends a note
event to the job's timeline at every audit level, and it is kept whatever the run does next;
``ctx.alert(title, detail, severity=...)`` opens a row in alerts_view (with an alert-opened
event). Bad text or an unknown severity is a ValidationError raised in the handler, which
then fails like any other error, with nothing written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobContext, JobStatus, SyncJobContext
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def alerts(ledger: Ledger) -> list[tuple[Any, ...]]:
    """Every alert a handler opened, as operators read it, oldest first (a job that fails
    for good also opens a failure incident: conformance/test_alerts.py covers those)."""
    return [
        tuple(row)
        for row in ledger.rows(
            "SELECT job_ref, job_name, kind, severity, title, detail, resolved_at "
            "FROM {schema}.alerts_view WHERE kind = 'manual' ORDER BY alert_id"
        )
    ]


def instant(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@pytest.mark.parametrize("audit", ["off", "failures", "full"])
def test_a_note_is_written_at_every_audit_level(
    acta_app: Acta, acta_host: Host, audit: str
) -> None:
    @acta_app.job("import-feed", audit=audit)
    def import_feed(feed: str, ctx: SyncJobContext) -> None:
        ctx.note(f"skipped 3 malformed rows in {feed}")

    ref = import_feed.enqueue("prices.csv")
    assert acta_host.tick() == "completed"
    names = acta_host.event_names(ref)
    notes = [e for e in acta_host.events(ref) if e.code is EventCode.NOTE]
    assert [n.message for n in notes] == ["skipped 3 malformed rows in prices.csv"]
    assert notes[0].execution == 1
    if audit == "off":
        assert names == ["note"]  # the one event of a job that writes no timeline
    if audit == "full":
        assert names.index("execution-started") < names.index("note")
        assert names.index("note") < names.index("execution-finished")


def test_notes_outlive_a_failed_run_and_tell_executions_apart(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("charge-card", max_attempts=2, backoff="1s", audit="off")
    async def charge(order: str, ctx: JobContext) -> None:
        await ctx.note(f"attempt {ctx.attempt}: asking the gateway")
        if ctx.attempt == 1:
            raise TimeoutError("gateway did not answer")
        await ctx.note("gateway said yes\nreference: gw-77")  # multi-line text is fine

    ref = charge.enqueue("o-1")
    acta_host.run_until_idle()
    notes = [(e.execution, e.message) for e in acta_host.events(ref) if e.code is EventCode.NOTE]
    assert notes == [
        (1, "attempt 1: asking the gateway"),
        (2, "attempt 2: asking the gateway"),
        (2, "gateway said yes\nreference: gw-77"),
    ]


def test_an_alert_opens_a_row_for_operators_and_an_event(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("reconcile")
    def reconcile(day: str, ctx: SyncJobContext) -> None:
        ctx.alert("Ledger mismatch", f"{day}: 3 payments missing", severity="critical")
        ctx.alert("Slow bank feed", severity="info")
        ctx.alert("Reconciled late")  # the default severity

    start = acta_host.clock.now()
    ref = reconcile.enqueue("2026-01-01")
    assert acta_host.tick() == "completed"
    assert alerts(ledger) == [
        (
            str(ref),
            "reconcile",
            "manual",
            "critical",
            "Ledger mismatch",
            "2026-01-01: 3 payments missing",
            None,
        ),
        (str(ref), "reconcile", "manual", "info", "Slow bank feed", None, None),
        (str(ref), "reconcile", "manual", "warning", "Reconciled late", None, None),
    ]
    opened = [instant(v) for (v,) in ledger.rows("SELECT opened_at FROM {schema}.alerts_view")]
    assert opened == [start] * 3
    [namespace] = {n for (n,) in ledger.rows("SELECT namespace FROM {schema}.alerts_view")}
    assert namespace == acta_app.namespace
    events = [e for e in acta_host.events(ref) if e.code is EventCode.ALERT_OPENED]
    assert [(e.message, e.detail) for e in events] == [
        ("Ledger mismatch", "2026-01-01: 3 payments missing"),
        ("Slow bank feed", None),
        ("Reconciled late", None),
    ]


def test_an_alert_is_recorded_even_when_the_job_writes_no_timeline(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("quiet-check", audit="off", max_attempts=1)
    async def quiet(n: int, ctx: JobContext) -> None:
        await ctx.alert("Disk almost full", "92% used on /data", severity="warning")
        raise RuntimeError("gave up after alerting")

    ref = quiet.enqueue(1)
    assert acta_host.tick() == "failed"
    assert acta_host.event_names(ref) == ["alert-opened"]
    assert [a[3:5] for a in alerts(ledger)] == [("warning", "Disk almost full")]


BAD_NOTES: list[Any] = ["", "   ", "nul\x00inside", "x" * 4001, 42, None]


@pytest.mark.parametrize("text", BAD_NOTES, ids=["empty", "blank", "nul", "long", "int", "none"])
def test_a_bad_note_fails_the_handler_with_a_validation_error(
    acta_app: Acta, acta_host: Host, ledger: Ledger, text: Any
) -> None:
    caught: list[str] = []

    @acta_app.job("scribble", max_attempts=1)
    def scribble(n: int, ctx: SyncJobContext) -> None:
        try:
            ctx.note(text)
        except Exception as exc:
            caught.append(type(exc).__name__)
            raise

    ref = scribble.enqueue(1)
    assert acta_host.tick() == "failed"
    assert caught == ["ValidationError"]
    assert "note" not in acta_host.event_names(ref)
    [(error,)] = ledger.rows(
        "SELECT last_error FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
    )
    assert "ValidationError: text" in error


BAD_ALERTS: dict[str, dict[str, Any]] = {
    "unknown-severity": {"title": "Backlog", "severity": "fatal"},
    "severity-upper-case": {"title": "Backlog", "severity": "CRITICAL"},
    "severity-number": {"title": "Backlog", "severity": 3},
    "empty-title": {"title": ""},
    "blank-title": {"title": "  "},
    "long-title": {"title": "t" * 201},
    "nul-in-title": {"title": "a\x00b"},
    "empty-detail": {"title": "Backlog", "detail": ""},
    "long-detail": {"title": "Backlog", "detail": "d" * 4001},
}


@pytest.mark.parametrize("case", sorted(BAD_ALERTS))
def test_a_bad_alert_fails_the_handler_and_opens_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger, case: str
) -> None:
    arguments = BAD_ALERTS[case]
    field = "severity" if "severity" in case else ("detail" if "detail" in case else "title")

    @acta_app.job("raise-alarm", max_attempts=1)
    async def raise_alarm(n: int, ctx: JobContext) -> None:
        await ctx.alert(**arguments)

    ref = raise_alarm.enqueue(1)
    assert acta_host.tick() == "failed"
    assert acta_host.job(ref).status is JobStatus.FAILED
    assert alerts(ledger) == []
    assert "alert-opened" not in acta_host.event_names(ref)
    [(error,)] = ledger.rows(
        "SELECT last_error FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
    )
    assert f"ValidationError: {field}" in error


@pytest.mark.parametrize("title", ["\x1b[2Jcleared screen", "invoice \u202etxt.exe"])
def test_an_alert_title_that_would_hide_or_reorder_text_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger, title: str
) -> None:
    @acta_app.job("sneaky-alert", max_attempts=1)
    def sneaky(n: int, ctx: SyncJobContext) -> None:
        ctx.alert(title)

    sneaky.enqueue(1)
    assert acta_host.tick() == "failed"
    assert alerts(ledger) == []
