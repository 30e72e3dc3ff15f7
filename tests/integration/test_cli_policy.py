"""``acta definitions policy``: show and change a job name's live policy override through
real runs of ``main()`` on a SQLite ledger file; rows are checked with plain sqlite3."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from acta.cli import main


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "jobs.sqlite3"
    app = Acta(path, apply_migrations=True)
    app.define("sync-crm")
    app.enqueue("sync-crm")  # the ledger now knows the job name
    app.close()
    return path


def _run(path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["definitions", "policy", "sync-crm", *argv, "--database", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


def test_show_set_and_clear(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(ledger, capsys) == (0, "sync-crm: overrides none; version 0\n", "")
    code, out, _ = _run(
        ledger, capsys, "--max-attempts", "2", "--timeout", "none", "--expect-version", "0"
    )
    assert code == 0 and "max_attempts=2, timeout_ms=None; version 1" in out
    code, _, err = _run(ledger, capsys, "--audit", "off", "--expect-version", "0")
    assert code == 1 and "version 1, not 0" in err
    code, out, _ = _run(
        ledger, capsys, "--clear", "max_attempts", "--expect-version", "1", "--json"
    )
    assert code == 0 and json.loads(out) == {
        "job": "sync-crm",
        "overrides": {"timeout_ms": None},
        "version": 2,
    }
    assert _rows(
        ledger, "SELECT max_attempts, timeout_ms, version FROM acta_effective_policy_view"
    ) == [(15, None, 2)]


def test_bad_usage_exits_2_and_writes_nothing(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(ledger, capsys, "--max-attempts", "0", "--expect-version", "0")[0] == 2
    assert _run(ledger, capsys, "--backoff", "sometimes", "--expect-version", "0")[0] == 2
    assert _run(ledger, capsys, "--max-attempts", "3")[0] == 2  # no --expect-version
    assert _run(ledger, capsys, "--clear", "colour", "--expect-version", "0")[0] == 2
    assert _rows(ledger, "SELECT count(*) FROM acta_policy_overrides") == [(0,)]
