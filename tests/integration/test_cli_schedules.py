"""``acta schedules``: list, preview, pause, resume, trigger and override, through real runs of
``main()`` on a SQLite ledger file that the test host filled (manual clock at 2026-01-01).
Rows are checked with plain sqlite3 connections, never through the code under test.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, JobContext
from acta.cli import main
from acta.policy.schedule import Schedule
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def ledger(acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider) -> Path:
    """A ledger with two scheduled jobs; 'tick' fired once at 00:01."""

    @acta_app.job("tick", schedule="1m")
    async def tick(ctx: JobContext) -> None: ...

    @acta_app.job("nightly", schedules={"paris": Schedule(cron="30 2 * * *", zone="Europe/Paris")})
    async def nightly(ctx: JobContext) -> None: ...

    acta_host.add_worker()
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    return acta_provider.path


# The keys the CLI guide documents for `acta schedules --json`.
SCHEDULE_KEYS = set(
    [
        "job",
        "schedule",
        "every_ms",
        "cron",
        "zone",
        "misfire",
        "overridden",
        "last_fired_at",
        "next_at",
        "firing_at",
        "triggered_at",
        "paused",
        "paused_until",
        "slot_ref",
        "version",
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


def test_list_shows_every_schedule_with_its_version(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(ledger, capsys, "schedules")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "job",
        "schedule",
        "expression",
        "misfire",
        "last",
        "fired",
        "next",
        "version",
    ]
    assert "nightly" in lines[1] and "cron '30 2 * * *' in Europe/Paris" in lines[1]
    # Its next instant is judged by the database's own clock (the terminal has no test clock).
    assert lines[2].split()[:5] == ["tick", "default", "every", "1m", "skip"]
    assert "2026-01-01 00:01:00Z" in lines[2]
    code, out, _ = _run(ledger, capsys, "schedules", "list", "tick", "--json")
    data = json.loads(out)
    # As the CLI guide documents: a listing is a JSON array, one object per schedule.
    assert isinstance(data, list) and all(set(s) == SCHEDULE_KEYS for s in data)
    assert [(s["job"], s["schedule"], s["every_ms"], s["version"]) for s in data] == [
        ("tick", "default", 60000, 1)
    ]
    assert data[0]["last_fired_at"] == "2026-01-01T00:01:00.000Z"


def test_preview_prints_the_next_instants(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ledger, capsys, "schedules", "preview", "nightly", "--schedule", "paris", "-n", "2"
    )
    assert code == 0
    # The command judges by the database clock (the wall clock here), months after the host's
    # 2026-01-01: a skip schedule that late fires once for its latest due instant, then on
    # from now. The backlog since January is not listed: it will never fire.
    first, second = (datetime.fromisoformat(line) for line in out.splitlines())
    assert (first.hour, first.minute) == (1, 30) and second - first == timedelta(days=1)
    assert first <= datetime.now(UTC) < second + timedelta(seconds=5)
    assert first > datetime(2026, 1, 2, 1, 30, tzinfo=UTC)


def test_pause_resume_trigger_and_override_change_the_rows(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(ledger, capsys, "schedules", "pause", "tick", "--reason", "deploy")
    assert code == 0 and "tick/default: every 1m, paused; version 2" in out
    assert _rows(
        ledger, "SELECT paused, version FROM acta_schedules_view WHERE job_name = 'tick'"
    ) == [(1, 2)]
    code, out, _ = _run(ledger, capsys, "schedules", "resume", "tick")
    assert code == 0 and "version 3" in out
    code, out, _ = _run(ledger, capsys, "schedules", "trigger", "tick")
    assert code == 0
    assert _rows(ledger, "SELECT triggered_at IS NOT NULL FROM acta_schedules") != [(0,), (0,)]
    code, _, err = _run(
        ledger, capsys, "schedules", "override", "tick", "--every", "5m", "--expect-version", "2"
    )
    assert code == 1 and "version 4, not 2" in err
    code, out, _ = _run(
        ledger, capsys, "schedules", "override", "tick", "--every", "5m", "--expect-version", "4"
    )
    assert code == 0 and "every 5m" in out
    code, out, _ = _run(
        ledger, capsys, "schedules", "override", "tick", "--clear", "--expect-version", "5"
    )
    assert code == 0 and "every 1m" in out
    messages = _rows(
        ledger,
        "SELECT message FROM acta_events_view WHERE event = 'schedule-changed' ORDER BY event_id",
    )
    assert [m[0].split(":")[0] for m in messages] == [
        "paused default",
        "resumed default",
        "triggered default",
        "overridden default",
        "override cleared default",
    ]


def test_bad_usage_exits_2_and_unknown_schedules_exit_1(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(
        ledger,
        capsys,
        "schedules",
        "override",
        "tick",
        "--cron",
        "0 25 * * *",
        "--expect-version",
        "1",
    )
    assert code == 2 and "cron" in err
    code, _, err = _run(ledger, capsys, "schedules", "pause", "tick", "--until", "tomorrow")
    assert code == 2 and "--until" in err
    code, _, err = _run(ledger, capsys, "schedules", "trigger", "nobody")
    assert code == 1 and "no schedule" in err
    assert _rows(ledger, "SELECT count(*) FROM acta_events WHERE code = 47") == [(0,)]
