"""``acta settings``: list, get, set and delete through real runs of ``main()`` on a SQLite
ledger file; rows are checked with plain sqlite3 connections."""

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
    app.define("export-orders")
    app.enqueue("export-orders")  # the ledger now knows the namespace and the job
    app.close()
    return path


def _run(path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*argv, "--database", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


def test_set_get_list_and_delete(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ledger,
        capsys,
        "settings",
        "set",
        "export.batch",
        "500",
        "--scope",
        "global",
        "--expect-version",
        "0",
    )
    assert (code, out) == (0, "export.batch set; version 1\n")
    code, out, _ = _run(
        ledger,
        capsys,
        "settings",
        "set",
        "export.batch",
        '{"size": 50}',
        "--job",
        "export-orders",
        "--expect-version",
        "0",
        "--actor",
        "ann",
        "--reason",
        "throttled",
    )
    assert code == 0
    code, out, _ = _run(ledger, capsys, "settings", "get", "export.batch", "--job", "export-orders")
    assert (code, json.loads(out)) == (0, {"size": 50})
    code, out, _ = _run(ledger, capsys, "settings", "get", "export.batch")
    assert (code, out) == (0, "500\n")
    code, out, _ = _run(ledger, capsys, "settings", "--json")
    listed = json.loads(out)  # a listing: a JSON array, one object per setting
    assert [(s["scope"], s["job"], s["value"], s["updated_by"]) for s in listed] == [
        ("global", None, 500, "operator"),
        ("definition", "export-orders", {"size": 50}, "ann"),
    ]
    code, _, err = _run(
        ledger,
        capsys,
        "settings",
        "delete",
        "export.batch",
        "--scope",
        "global",
        "--expect-version",
        "2",
    )
    assert code == 1 and "version 1, not 2" in err
    code, _, _ = _run(
        ledger,
        capsys,
        "settings",
        "delete",
        "export.batch",
        "--scope",
        "global",
        "--expect-version",
        "1",
    )
    assert code == 0
    assert _rows(ledger, "SELECT scope, name FROM acta_settings") == [(3, "export.batch")]
    assert _rows(ledger, "SELECT count(*) FROM acta_events WHERE code = 61") == [(3,)]


def test_bad_usage_exits_2_and_writes_nothing(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(
        ledger, capsys, "settings", "set", "x", "{not json", "--expect-version", "0"
    )
    assert code == 2 and "not JSON" in err
    deep = "[" * 5000 + "]" * 5000
    code, out, err = _run(ledger, capsys, "settings", "set", "x", deep, "--expect-version", "0")
    assert (code, out) == (2, "") and err.startswith("error: "), err
    assert "Traceback" not in err
    code, _, err = _run(ledger, capsys, "settings", "set", "Bad Name", "1", "--expect-version", "0")
    assert code == 2 and "name" in err
    code, _, err = _run(
        ledger, capsys, "settings", "set", "x", "1", "--job", "ghost", "--expect-version", "0"
    )
    assert code == 1 and "no job 'ghost'" in err
    code, _, err = _run(ledger, capsys, "settings", "get", "nothing.here")
    assert code == 1
    assert _rows(ledger, "SELECT count(*) FROM acta_settings") == [(0,)]
