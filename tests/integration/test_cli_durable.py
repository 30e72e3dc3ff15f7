"""``acta jobs signal``, ``acta jobs resume`` and what ``acta jobs show`` says about durable jobs
(progress, the wait a suspended job is parked on, a paused job's reason), through real runs of
``main()`` on a SQLite ledger file.

The test host fills the ledger (manual clock at 2026-01-01, so instants are known) and runs
the jobs the CLI releases; the CLI opens the same file on its own, as an operator's terminal
would. Rows are checked with plain sqlite3 connections, never through the code under test.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import acta.cli
from acta import Acta, JobContext, JobStatus, Pause
from acta.cli import durable, main
from acta.provider.sqlite import SqliteProvider
from acta.signals import Progress
from acta_testing import Host


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No ledger from the environment or the working directory can stand in for the one named.
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)


def _signals(path: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT name, body FROM acta_signals ORDER BY name").fetchall()


def _fields(out: str) -> dict[str, str]:
    """``acta jobs show`` text as label -> value (labels may be two words)."""
    fields = {}
    for line in out.splitlines()[1:]:
        label, value = line.strip().split("  ", 1)
        fields[label] = value.strip()
    return fields


@dataclass
class Parked:
    path: Path
    approval: str
    nap: str
    held: str
    done: str


@pytest.fixture
def parked(acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider) -> Parked:
    """An import that reported progress and waits for signal 'approve' (no timeout), a job
    sleeping five minutes, a job its handler paused, and a finished job."""

    @acta_app.job("import.rows")
    async def import_rows(batch: int, ctx: JobContext) -> Any:
        await ctx.set_progress(43_000, 90_000, "rows")
        decision = await ctx.wait_signal("approve")
        await ctx.set_progress(90_000, 90_000, "rows")
        return decision

    @acta_app.job("report.later")
    async def report_later(n: int, ctx: JobContext) -> str:
        await ctx.sleep(timedelta(minutes=5), name="nap")
        return "rested"

    @acta_app.job("review.hold")
    async def review_hold(n: int, ctx: JobContext) -> str:
        if ctx.execution == 1:
            return Pause("waiting for a person to look")  # type: ignore[return-value]
        return f"reviewed in execution {ctx.execution}"

    @acta_app.job("quick")
    async def quick(n: int) -> int:
        return n

    refs = [
        import_rows.enqueue(1),
        report_later.enqueue(2),
        review_hold.enqueue(3),
        quick.enqueue(4),
    ]
    assert [acta_host.tick() for _ in refs] == ["suspended", "suspended", "paused", "completed"]
    return Parked(acta_provider.path, *(str(r) for r in refs))


def _run(path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*argv, "--database", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


# -- jobs show ---------------------------------------------------------------------------------


def test_show_prints_progress_and_the_signal_a_job_waits_for(
    parked: Parked, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(parked.path, capsys, "jobs", "show", parked.approval)
    assert code == 0
    fields = _fields(out)
    assert fields["status"] == "suspended"
    assert fields["progress"] == "43,000 of 90,000 (rows)"
    assert fields["waiting for"] == "signal:approve, no timeout"
    assert fields["next run"] == "-"  # no timer: nothing to print but a far-future placeholder


def test_show_prints_when_a_sleeping_job_wakes(
    parked: Parked, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(parked.path, capsys, "jobs", "show", parked.nap)
    assert code == 0
    fields = _fields(out)
    assert fields["waiting for"] == "sleep:nap, wakes at 2026-01-01 00:05:00Z"
    assert fields["next run"] == "2026-01-01 00:05:00Z"
    assert "progress" not in fields


def test_show_prints_a_paused_jobs_reason_and_how_to_resume_it(
    parked: Parked, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(parked.path, capsys, "jobs", "show", parked.held)
    assert code == 0
    fields = _fields(out)
    assert fields["status"] == "paused"
    assert fields["paused"] == (
        f"waiting for a person to look; resume with: acta jobs resume {parked.held}"
    )
    assert "waiting for" not in fields


def test_show_json_has_progress_and_the_wait(
    parked: Parked, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(parked.path, capsys, "jobs", "show", parked.approval, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["progress"] == {
        "done": 43000.0,
        "total": 90000.0,
        "message": "rows",
        "updated_at": "2026-01-01T00:00:00.000Z",
    }
    assert data["waiting_for"] == {
        "wait": "signal:approve",
        "kind": "signal",
        "name": "approve",
        "due_at": None,
    }
    assert data["pause_reason"] is None
    _, out, _ = _run(parked.path, capsys, "jobs", "show", parked.nap, "--json")
    assert json.loads(out)["waiting_for"]["due_at"] == "2026-01-01T00:05:00.000Z"
    _, out, _ = _run(parked.path, capsys, "jobs", "show", parked.done, "--json")
    data = json.loads(out)
    assert (data["progress"], data["waiting_for"]) == (None, None)


# -- jobs signal -------------------------------------------------------------------------------


def test_signal_releases_a_waiting_job_with_its_payload(
    parked: Parked, acta_host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = '{"approved": true, "by": "ana"}'
    code, out, _ = _run(
        parked.path, capsys, "jobs", "signal", parked.approval, "approve", "--payload", payload
    )
    assert code == 0
    assert out.strip() == (
        f"released: {parked.approval} was waiting for signal 'approve': it is ready to run again"
    )
    assert acta_host.job(parked.approval).status is JobStatus.READY
    assert _signals(parked.path) == [("approve", b'{"approved":true,"by":"ana"}')]
    _, out, _ = _run(parked.path, capsys, "jobs", "show", parked.approval)
    assert "waiting for" not in _fields(out)


def test_signal_outcomes_and_their_exit_codes(
    parked: Parked, capsys: pytest.CaptureFixture[str]
) -> None:
    def signal(ref: str, name: str, *more: str) -> tuple[int, str]:
        code, out, err = _run(parked.path, capsys, "jobs", "signal", ref, name, *more)
        assert err == ""  # an outcome is an answer, not an error
        return code, out.split(":", 1)[0]

    assert signal(parked.nap, "go", "--payload", "42") == (0, "stored")
    assert signal(parked.nap, "go", "--payload", "43") == (1, "already-sent")
    assert signal(parked.nap, "word", "--payload", '"yes"') == (0, "stored")
    assert signal(parked.done, "go") == (1, "job-finished")
    assert signal("job_" + "0" * 26, "go") == (1, "no-such-job")
    assert _signals(parked.path) == [("go", b"42"), ("word", b"yes")]  # the first "go" stands

    code, out, _ = _run(parked.path, capsys, "jobs", "signal", parked.approval, "approve", "--json")
    assert code == 0
    assert json.loads(out) == {
        "job_ref": parked.approval,
        "signal": "approve",
        "outcome": "released",
    }


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["job_nope", "go"], "error: job ref:"),
        (["{ref}", " go"], "error: name:"),
        (["{ref}", "x" * 201], "error: name:"),
        (["{ref}", "go", "--payload", "yes"], "error: --payload: not JSON"),
        (["{ref}", "go", "--payload", "NaN"], "error: --payload: not JSON"),
        (["{ref}", "go", "--payload", '"\\ud800"'], "error: payload:"),
        # Deeper than Python's JSON parser recurses: a clean usage error, not a traceback.
        (["{ref}", "go", "--payload", "[" * 5000 + "]" * 5000], "error: --payload:"),
        (["{ref}", "go", "--payload", '{"a":' * 5000 + "1" + "}" * 5000], "error: --payload:"),
    ],
    ids=[
        "bad-ref",
        "padded-name",
        "long-name",
        "not-json",
        "nan",
        "lone-surrogate",
        "5000-deep-array",
        "5000-deep-object",
    ],
)
def test_bad_signal_input_is_usage_and_stores_nothing(
    parked: Parked, capsys: pytest.CaptureFixture[str], argv: list[str], complaint: str
) -> None:
    args = [a.replace("{ref}", parked.approval) for a in argv]
    code, out, err = _run(parked.path, capsys, "jobs", "signal", *args)
    assert (code, out) == (2, "")
    assert err.startswith(complaint), err
    assert _signals(parked.path) == []


def test_bad_input_is_refused_before_the_ledger_is_looked_at(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.sqlite3"
    ref = "job_" + "0" * 26
    code, _, err = _run(missing, capsys, "jobs", "signal", ref, "go", "--payload", "{")
    assert code == 2 and "--payload" in err
    code, _, err = _run(missing, capsys, "jobs", "resume", ref, "--reason", " ")
    assert code == 2 and err.startswith("error: reason:")
    assert not missing.exists()


# -- jobs resume -------------------------------------------------------------------------------


def test_resume_takes_a_paused_job_back_to_ready(
    parked: Parked, acta_host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        parked.path, capsys, "jobs", "resume", parked.held, "--reason", "looked at it"
    )
    assert code == 0
    assert out.strip() == (f"resumed {parked.held}: ready, it runs again when a worker claims it")
    assert acta_host.job(parked.held).status is JobStatus.READY
    resumed = [e for e in acta_host.events(parked.held) if e.code.label == "resumed"]
    assert [e.message for e in resumed] == ["looked at it"]

    code, _, err = _run(parked.path, capsys, "jobs", "resume", parked.held)
    assert code == 1
    assert err.startswith(f"error: job {parked.held} is ready, not paused")
    code, _, err = _run(parked.path, capsys, "jobs", "resume", parked.nap, "--json")
    assert code == 1 and "is suspended, not paused" in err
    code, _, err = _run(parked.path, capsys, "jobs", "resume", "job_" + "0" * 26)
    assert code == 1 and "no job" in err


def test_resume_json(parked: Parked, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(parked.path, capsys, "jobs", "resume", parked.held, "--json")
    assert code == 0
    assert json.loads(out) == {"job_ref": parked.held, "status": "ready"}


# -- inside a host CLI, on the host's clock ------------------------------------------------------
# A CLI run with --database keeps the wall clock, far from the host's manual one; mounted in a
# host's own CLI, the commands use the host's Acta and so its clock, and the host can then run
# what they release.


def _on_host(app: Acta, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="myproject")
    acta.cli.add_commands(parser.add_subparsers(metavar="COMMAND", required=True))
    capsys.readouterr()
    code = acta.cli.run(parser.parse_args(list(argv)), app=app)
    return code, capsys.readouterr().out


def test_a_signalled_job_runs_on_with_the_payload(
    parked: Parked, acta_app: Acta, acta_host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    host_app = Acta(parked.path, clock=acta_host.clock)
    try:
        code, out = _on_host(
            host_app, capsys, "jobs", "signal", parked.approval, "approve", "--payload", "[1, 2]"
        )
        assert (code, out.split(":")[0]) == (0, "released")
        code, _ = _on_host(host_app, capsys, "jobs", "resume", parked.held)
        assert code == 0
        assert acta_host.tick() == "completed"
        assert acta_host.tick() == "completed"
        assert acta_app.result(parked.approval) == [1, 2]
        assert acta_app.result(parked.held) == "reviewed in execution 2"
        _, out = _on_host(host_app, capsys, "jobs", "show", parked.approval)
        assert _fields(out)["progress"] == "90,000 of 90,000 (rows)"
    finally:
        host_app.close()


def test_a_signal_after_the_timeout_is_stored_but_releases_nothing(
    acta_app: Acta,
    acta_host: Host,
    acta_provider: SqliteProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    @acta_app.job("timed")
    async def timed(n: int, ctx: JobContext) -> bool:
        return (await ctx.try_wait_signal("go", timeout="10m")).received

    ref = str(timed.enqueue(1))
    assert acta_host.tick() == "suspended"
    host_app = Acta(acta_provider.path, clock=acta_host.clock)
    try:
        code, out = _on_host(host_app, capsys, "jobs", "show", ref)
        assert code == 0
        assert _fields(out)["waiting for"] == "signal:go, times out at 2026-01-01 00:10:00Z"
        acta_host.advance(timedelta(minutes=10, seconds=1))
        code, out = _on_host(host_app, capsys, "jobs", "signal", ref, "go")
        assert (code, out.split(":")[0]) == (0, "stored")
    finally:
        host_app.close()
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) is False


def test_progress_counts_are_written_in_full() -> None:
    from datetime import UTC, datetime

    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert durable.progress_text(Progress(1_234_567, 2_000_000, "rows", at)) == (
        "1,234,567 of 2,000,000 (rows)"
    )
    assert durable.progress_text(Progress(2.5, None, None, at)) == "2.5"
    assert durable.progress_text(Progress(12.75, 40, "hours", at)) == "12.75 of 40 (hours)"


def test_progress_str_writes_large_counts_in_full() -> None:
    from datetime import UTC, datetime

    slot = Progress(1_234_567, 2_000_000, "rows", datetime(2026, 1, 1, tzinfo=UTC))
    assert str(slot) == "1,234,567 of 2,000,000 (rows)"
