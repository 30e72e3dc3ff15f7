"""``acta jobs explain REF`` (and ``--json``): the operator surface's explain from a terminal,
through real runs of ``main()`` on a SQLite ledger file.

The test host fills the ledger (manual clock at 2026-01-01); the CLI opens the same file on
its own and judges by the database clock, so the cases here are states whose verdict does
not depend on the hour (failed, paused, waiting for a signal with no timeout). The verdicts
themselves, state by state and on both providers, are conformance/test_explain.py's job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, JobContext, Pause
from acta.cli import main
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No ledger from the environment or the working directory can stand in for the one named.
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)


def _run(path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*argv, "--database", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def _fields(out: str) -> dict[str, str]:
    """The label/value lines of the text form (facts are indented one level deeper)."""
    fields = {}
    for line in out.splitlines()[1:]:
        label, _, value = line.strip().partition("  ")
        fields[label] = value.strip()
    return fields


@pytest.fixture
def refs(acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider) -> dict[str, str]:
    """A job that failed for good, one its handler paused, one waiting for a signal."""

    @acta_app.job("sync-crm", max_attempts=2, backoff="1s")
    async def sync_crm(n: int) -> None:
        raise ConnectionError("crm is down")

    @acta_app.job("review")
    async def review(n: int) -> Any:
        return Pause("a person must look at it")

    @acta_app.job("approve")
    async def approve(n: int, ctx: JobContext) -> None:
        await ctx.wait_signal("approved")

    found = {
        "failed": str(sync_crm.enqueue(1)),
        "paused": str(review.enqueue(2)),
        "waiting": str(approve.enqueue(3)),
    }
    acta_host.run_until_idle()
    return found


def test_explain_prints_the_verdict_why_and_next_step(
    refs: dict[str, str], acta_provider: SqliteProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(acta_provider.path, capsys, "jobs", "explain", refs["failed"])
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"{refs['failed']}  sync-crm  failed"
    fields = _fields(out)
    assert fields["verdict"] == "failed"
    assert "after 2 of 2 attempt(s): its last allowed attempt failed" in fields["why"]
    assert "Last error: attempt 2 of 2 failed: ConnectionError: crm is down" in fields["why"]
    assert f"acta jobs restart {refs['failed']}" in fields["next"]
    assert fields["reason"] == "attempts-exhausted"
    assert fields["attempts"] == "2"


def test_explain_tells_a_paused_job_how_to_resume(
    refs: dict[str, str], acta_provider: SqliteProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(acta_provider.path, capsys, "jobs", "explain", refs["paused"])
    assert code == 0
    fields = _fields(out)
    assert fields["verdict"] == "paused"
    assert "(a person must look at it)" in fields["why"]
    assert fields["next"].startswith(f"Resume it when ready: acta jobs resume {refs['paused']}")


def test_explain_json_is_the_explanation_object(
    refs: dict[str, str],
    acta_app: Acta,
    acta_provider: SqliteProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(acta_provider.path, capsys, "jobs", "explain", refs["waiting"], "--json")
    assert code == 0
    data = json.loads(out)
    assert data["verdict"] == "waiting-for-signal"
    assert data["facts"]["signal"] == "approved"
    assert data["facts"]["timeout_at"] is None
    here = acta_app.ops.explain(refs["waiting"]).to_data()
    # The same object as the API gives; only the instant it was checked at differs (the CLI
    # reads the database clock, the host its manual one).
    data["facts"].pop("checked_at")
    here["facts"].pop("checked_at")
    assert data == here


def test_an_unknown_ref_is_an_error_naming_the_namespace(
    refs: dict[str, str], acta_provider: SqliteProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = "job_0" + "1" * 25
    code, out, err = _run(acta_provider.path, capsys, "jobs", "explain", missing)
    assert code == 1
    assert out == ""
    assert err.strip() == f"error: no job {missing} in namespace 'default'"


def test_a_malformed_ref_is_bad_usage_before_any_ledger_is_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nowhere = tmp_path / "absent.sqlite3"
    code, out, err = _run(nowhere, capsys, "jobs", "explain", "job_nope")
    assert code == 2
    assert out == ""
    assert "job ref" in err
    assert not nowhere.exists()  # nothing was created
