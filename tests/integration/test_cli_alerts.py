"""``acta alerts``: list, ack and resolve through real runs of ``main()`` on a SQLite ledger
file that the test host filled. Rows are checked with plain sqlite3 connections, never through
the code under test.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, SyncJobContext
from acta.cli import main
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def ledger(acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider) -> Path:
    """Three failures of 'import-feed' (one incident) and a manual alert."""

    @acta_app.job("import-feed", max_attempts=1)
    def import_feed(n: int) -> None:
        raise RuntimeError(f"feed {n} is empty")

    @acta_app.job("reconcile")
    def reconcile(ctx: SyncJobContext) -> None:
        ctx.alert("books do not balance", severity="critical")

    for n in range(3):
        import_feed.enqueue(n)
    reconcile.enqueue()
    acta_host.run_until_idle()
    return acta_provider.path


# The keys the CLI guide documents for `acta alerts --json`.
ALERT_KEYS = set(
    [
        "alert_id",
        "kind",
        "severity",
        "title",
        "detail",
        "job_name",
        "job_ref",
        "reason_class",
        "occurrences",
        "opened_at",
        "first_seen_at",
        "last_seen_at",
        "acknowledged_at",
        "acknowledged_by",
        "resolved_at",
        "resolved_by",
        "next_reminder_at",
        "last_notified_at",
    ]
)


def _run(path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*argv, "--database", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


def test_list_shows_the_incident_once_with_its_count(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(ledger, capsys, "alerts")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["id", "severity", "kind", "title", "count"]
    assert len(lines) == 3  # the header, the manual alert, the one incident
    incident = next(line for line in lines if "failure" in line)
    assert "import-feed failed: attempts-exhausted" in incident and " 3 " in incident
    code, out, _ = _run(ledger, capsys, "alerts", "list", "--json")
    data = json.loads(out)
    # As the CLI guide documents: a listing is a JSON array, one object per alert.
    assert isinstance(data, list) and all(set(a) == ALERT_KEYS for a in data)
    assert sorted((a["kind"], a["occurrences"]) for a in data) == [
        ("failure", 3),
        ("manual", 1),
    ]
    assert all(a["resolved_at"] is None for a in data)


def test_ack_then_resolve_are_recorded_with_the_actor(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [(alert_id,)] = _rows(ledger, "SELECT id FROM acta_alerts WHERE kind = 2")
    code, out, _ = _run(ledger, capsys, "alerts", "ack", str(alert_id), "--by", "ana")
    assert code == 0 and "acknowledged by ana" in out
    code, out, _ = _run(
        ledger, capsys, "alerts", "resolve", str(alert_id), "--by", "ana", "--reason", "fixed"
    )
    assert code == 0 and "resolved by ana" in out
    assert _rows(
        ledger, f"SELECT acknowledged_by, resolved_by FROM acta_alerts WHERE id = {alert_id}"
    ) == [("ana", "ana")]
    events = _rows(
        ledger,
        "SELECT message FROM acta_events_view WHERE event IN "
        "('alert-acknowledged', 'alert-resolved') ORDER BY at, message",
    )
    assert [m for (m,) in events] == [
        f"alert {alert_id} acknowledged by ana: acknowledged from the CLI",
        f"alert {alert_id} resolved by ana: fixed",
    ]
    # Open alerts no longer include it; --all does.
    code, out, _ = _run(ledger, capsys, "alerts", "--json")
    assert [a["kind"] for a in json.loads(out)] == ["manual"]
    code, out, _ = _run(ledger, capsys, "alerts", "list", "--all", "--json")
    assert len(json.loads(out)) == 2


def test_bad_input_changes_nothing(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _rows(ledger, "SELECT * FROM acta_alerts ORDER BY id")
    code, _, err = _run(ledger, capsys, "alerts", "resolve", "999", "--by", "ana")
    assert code == 1 and "no alert 999" in err
    code, _, err = _run(ledger, capsys, "alerts", "ack", "0")
    assert code == 2
    code, _, err = _run(ledger, capsys, "alerts", "ack", "1", "--by", "ana\x1b[31m")
    assert code == 2 and "--by" in err
    code, _, err = _run(ledger, capsys, "alerts", "list", "--limit", "0")
    assert code == 2
    [(alert_id,)] = _rows(ledger, "SELECT id FROM acta_alerts WHERE kind = 1")
    assert _run(ledger, capsys, "alerts", "resolve", str(alert_id), "--by", "bo")[0] == 0
    code, _, err = _run(ledger, capsys, "alerts", "resolve", str(alert_id), "--by", "ana")
    assert code == 1 and "already resolved by bo" in err
    after = _rows(ledger, "SELECT * FROM acta_alerts ORDER BY id")
    assert [r for r in after if r[0] != alert_id] == [r for r in before if r[0] != alert_id]
