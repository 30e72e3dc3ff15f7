"""``acta tenants`` and ``acta namespaces list|suspend|update`` through real runs of ``main()``
on a SQLite ledger file; rows are checked with plain sqlite3 connections."""

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
    app.define("invoice")
    app.enqueue("invoice")  # the ledger now knows the namespace and the job
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


def test_register_list_suspend_resume_and_update(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        ledger,
        capsys,
        "tenants",
        "register",
        "acme-42",
        "--tag",
        "gold",
        "--metadata",
        '{"owner": "billing"}',
        "--actor",
        "ann",
    )
    assert (code, out) == (0, "tenant acme-42: registered, version 1\n")
    code, out, _ = _run(ledger, capsys, "tenants", "suspend", "acme-42", "--reason", "unpaid")
    assert (code, out) == (0, "tenant acme-42: suspended\n")
    code, out, _ = _run(ledger, capsys, "tenants", "suspend", "acme-42")
    assert (code, out) == (0, "tenant acme-42: already suspended, nothing changed\n")
    code, out, _ = _run(ledger, capsys, "tenants", "--json")
    assert code == 0
    [listed] = json.loads(out)  # a listing: a JSON array, one object per tenant
    assert listed["tenant"] == "acme-42" and listed["suspended"] is True
    assert listed["suspend_reason"] == "unpaid" and listed["suspended_by"].startswith("cli:")
    assert listed["tags"] == ["gold"] and listed["metadata"] == {"owner": "billing"}
    code, out, _ = _run(ledger, capsys, "tenants", "list", "--suspended")
    assert code == 0 and "acme-42" in out and "suspended" in out and "unpaid" in out

    code, out, _ = _run(ledger, capsys, "tenants", "resume", "acme-42", "--expect-version", "2")
    assert (code, out) == (0, "tenant acme-42: resumed\n")
    code, out, _ = _run(
        ledger, capsys, "tenants", "update", "acme-42", "--tag", "silver", "--expect-version", "3"
    )
    assert (code, out) == (0, "tenant acme-42: updated, version 4\n")
    assert _rows(ledger, "SELECT tags, suspended, version FROM acta_tenants") == [
        ('["silver"]', 0, 4)
    ]


def test_a_stale_version_exits_1_and_changes_nothing(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(ledger, capsys, "tenants", "register", "acme")
    code, _, err = _run(
        ledger, capsys, "tenants", "update", "acme", "--tag", "x", "--expect-version", "7"
    )
    assert code == 1 and "version 1, not 7" in err
    code, _, err = _run(ledger, capsys, "tenants", "suspend", "nobody")
    assert code == 1 and "no tenant 'nobody'" in err
    assert _rows(ledger, "SELECT tags, version FROM acta_tenants") == [("[]", 1)]


@pytest.mark.parametrize(
    "argv",
    [
        ("tenants", "register", "bad\x01key"),
        ("tenants", "register", "acme", "--metadata", "[1, 2]"),
        ("tenants", "register", "acme", "--metadata", "{not json"),
        ("tenants", "register", "acme", "--metadata", '{"a":' * 5000 + "1" + "}" * 5000),
        ("tenants", "update", "acme", "--expect-version", "1"),
        ("tenants", "update", "acme", "--tag", "x", "--expect-version", "0"),
        ("namespaces", "update", "Bad Name", "--tag", "x", "--expect-version", "1"),
    ],
)
def test_bad_arguments_exit_2_before_the_ledger_is_touched(
    ledger: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    code, _, err = _run(ledger, capsys, *argv)
    assert code == 2 and err
    assert _rows(ledger, "SELECT count(*) FROM acta_tenants") == [(0,)]


def test_namespaces_list_suspend_and_update(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        ledger,
        capsys,
        "namespaces",
        "update",
        "default",
        "--metadata",
        '{"team": "payments"}',
        "--expect-version",
        "1",
    )
    assert (code, out) == (0, "namespace default: updated, version 2\n")
    code, out, _ = _run(ledger, capsys, "namespaces", "suspend", "default", "--reason", "deploy")
    assert (code, out) == (0, "namespace default: suspended\n")
    code, out, _ = _run(ledger, capsys, "namespaces", "pause", "default")  # the same thing
    assert code == 0 and "already paused" in out
    code, out, _ = _run(ledger, capsys, "namespaces", "list", "--json")
    [listed] = json.loads(out)
    assert listed["suspended"] is True and listed["version"] == 3
    assert listed["metadata"] == {"team": "payments"}
    code, out, _ = _run(ledger, capsys, "namespaces", "resume", "default")
    assert code == 0
    code, out, _ = _run(ledger, capsys, "namespaces", "list")
    assert "default" in out and "running" in out and "payments" in out


def test_jobs_list_and_bulk_cancel_filter_by_tenant(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = Acta(ledger)
    app.define("invoice")
    app.tenants.register("acme")
    kept = app.enqueue("invoice", tenant="acme", delay="1h")
    app.close()
    code, out, _ = _run(ledger, capsys, "jobs", "list", "--tenant", "acme", "--json")
    assert code == 0
    assert [(j["job_ref"], j["tenant"]) for j in json.loads(out)] == [(str(kept), "acme")]
    code, out, _ = _run(ledger, capsys, "jobs", "cancel", "--tenant", "acme", "--dry-run")
    assert code == 0 and "1" in out
    code, _, err = _run(ledger, capsys, "jobs", "list", "--tenant", "bad\x07")
    assert code == 2 and "tenant" in err
