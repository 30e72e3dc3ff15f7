"""``acta jobs restart|reschedule|amend|cancel|purge``, ``acta definitions`` and ``acta
namespaces``, through real runs of ``main()`` on a SQLite ledger file the test host filled.
Rows are checked with plain sqlite3 connections, never through the code under test.
"""

from __future__ import annotations

import io
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from acta.cli import main
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def ledger(acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider) -> Path:
    """Three failed 'sync' jobs (tagged eu), one succeeded 'report', one waiting 'report'."""

    @acta_app.job("sync", max_attempts=1)
    def sync(n: int) -> None:
        raise RuntimeError("upstream down")

    @acta_app.job("report")
    def report(n: int) -> int:
        return n

    for n in range(3):
        sync.enqueue(n, tags=["eu"])
    report.enqueue(1)
    acta_host.run_until_idle()
    report.enqueue(2, delay="1d")
    return acta_provider.path


def _run(path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*argv, "--database", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def _rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


def _ref(path: Path, name: str, status: str) -> str:
    return str(
        _rows(
            path,
            "SELECT job_ref FROM acta_jobs_view WHERE job_name = ? AND status = ? "
            "ORDER BY job_id LIMIT 1",
            (name, status),
        )[0][0]
    )


def _statuses(path: Path, name: str) -> list[str]:
    rows = _rows(
        path, "SELECT status FROM acta_jobs_view WHERE job_name = ? ORDER BY job_id", (name,)
    )
    return [r[0] for r in rows]


def test_restart_one_job_records_actor_and_reason(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = _ref(ledger, "sync", "failed")
    code, out, _ = _run(
        ledger, capsys, "jobs", "restart", ref, "--reason", "fixed upstream", "--actor", "ops:kim"
    )
    assert code == 0 and out.startswith(f"restart {ref}: ready")
    [(detail, actor)] = _rows(
        ledger, "SELECT detail, actor FROM acta_events WHERE job_ref = ? AND code = 70", (ref,)
    )
    assert actor == "ops:kim"
    assert json.loads(detail)["reason"] == "fixed upstream"
    code, _, err = _run(ledger, capsys, "jobs", "restart", ref)
    assert code == 1 and "is ready" in err  # restarting it again: it has not finished


def test_bulk_restart_asks_for_confirmation(
    ledger: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = _run(ledger, capsys, "jobs", "restart", "--tag", "eu", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["matched"] == 3
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, _, err = _run(ledger, capsys, "jobs", "restart", "--tag", "eu")
    assert code == 1 and "not confirmed" in err
    assert _statuses(ledger, "sync") == ["failed"] * 3
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, out, err = _run(ledger, capsys, "jobs", "restart", "--tag", "eu")
    assert code == 0 and "restart 3 job(s)?" in err and "3 changed" in out
    assert _statuses(ledger, "sync") == ["ready"] * 3


def test_reschedule_amend_and_cancel(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    waiting = _ref(ledger, "report", "ready")
    code, out, _ = _run(
        ledger, capsys, "jobs", "reschedule", waiting, "--at", "2030-01-01T00:00:00Z", "--json"
    )
    assert code == 0 and json.loads(out)["job"]["next_run_at"].startswith("2030-01-01T00:00:00")
    code, _, _ = _run(
        ledger,
        capsys,
        "jobs",
        "amend",
        waiting,
        "--priority",
        "7",
        "--max-attempts",
        "3",
        "--tags",
        "a,b",
    )
    assert code == 0
    [(priority, max_attempts, tags)] = _rows(
        ledger,
        "SELECT priority, max_attempts, tags FROM acta_jobs_view WHERE job_ref = ?",
        (waiting,),
    )
    assert (priority, max_attempts, json.loads(tags)) == (7, 3, ["a", "b"])
    code, _, err = _run(ledger, capsys, "jobs", "amend", waiting)
    assert code == 2 and "--priority" in err
    code, _, _ = _run(ledger, capsys, "jobs", "cancel", "--name", "report", "--yes")
    assert code == 0
    assert _statuses(ledger, "report") == ["succeeded", "cancelled"]


def test_purge_before_an_instant(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ledger,
        capsys,
        "jobs",
        "purge",
        "--before",
        "2100-01-01T00:00:00Z",
        "--name",
        "sync",
        "--yes",
        "--json",
    )
    assert code == 0 and json.loads(out)["changed"] == 3
    assert _statuses(ledger, "sync") == []
    assert _rows(ledger, "SELECT count(*) FROM acta_events WHERE code = 32")[0][0] == 3
    code, _, err = _run(ledger, capsys, "jobs", "purge", "--before", "whenever", "--yes")
    assert code == 2 and "ISO 8601" in err


def test_definitions_and_namespaces(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(ledger, capsys, "definitions", "pause", "report", "--reason", "audit")
    assert code == 0 and out.strip() == "definition report: paused"
    code, out, _ = _run(ledger, capsys, "definitions", "pause", "report")
    assert code == 0 and "already paused" in out
    assert _rows(ledger, "SELECT paused FROM acta_definitions WHERE name = 'report'") == [(1,)]
    code, _, _ = _run(ledger, capsys, "definitions", "resume", "report")
    assert code == 0
    code, out, _ = _run(ledger, capsys, "definitions", "retire", "report", "--yes", "--json")
    assert code == 0 and json.loads(out)["changed"] == 1
    assert _statuses(ledger, "report") == ["succeeded", "cancelled"]
    code, _, err = _run(ledger, capsys, "definitions", "resume", "report")
    assert code == 1 and "retired" in err
    code, _, err = _run(ledger, capsys, "definitions", "pause", "nope")
    assert code == 1 and "no definition 'nope'" in err
    code, out, _ = _run(ledger, capsys, "namespaces", "pause", "default")
    assert code == 0 and out.strip() == "namespace default: paused"
    assert _rows(ledger, "SELECT paused FROM acta_namespaces WHERE name = 'default'") == [(1,)]
    code, _, _ = _run(ledger, capsys, "namespaces", "resume", "default")
    assert code == 0


def test_bad_usage_changes_nothing(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _rows(ledger, "SELECT count(*) FROM acta_events")
    for argv in (
        ("jobs", "restart"),  # neither a ref nor a filter
        ("jobs", "restart", "job_00000000000000000000000000", "--name", "sync"),
        ("jobs", "restart", "--status", "ready", "--yes"),
        ("jobs", "reschedule", "--name", "report", "--at", "soon", "--yes"),
        ("jobs", "restart", "not-a-ref"),
        ("definitions", "pause", "Bad Name"),
        ("namespaces", "pause", "bad name"),
    ):
        code, _, _ = _run(ledger, capsys, *argv)
        assert code == 2, argv
    assert _rows(ledger, "SELECT count(*) FROM acta_events") == before
