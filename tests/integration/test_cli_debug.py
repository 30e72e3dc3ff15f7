"""``acta jobs debug REF --app module:app``: one persisted job claimed and run in this process,
stopping at a breakpoint first, and settled like any run. The breakpoint hook is pointed at a
recorder with ``PYTHONBREAKPOINT`` (the variable pdb's hook honours), so no terminal is needed.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from acta.cli import main

APP = """
from acta import Acta

app = Acta()
stops = []


def stopped():
    stops.append("stopped")


@app.job("greet")
def greet(name: str) -> str:
    return f"hello {name}"


@app.job("flaky", max_attempts=3, backoff="1h")
async def flaky(n: int) -> None:
    raise RuntimeError(f"flaky {n} failed")
"""


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "jobs.sqlite3"
    (tmp_path / "debug_app.py").write_text(APP, "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ACTA_DATABASE", str(path))
    monkeypatch.setenv("PYTHONBREAKPOINT", "debug_app.stopped")
    Acta(path, apply_migrations=True).migrate()
    yield path
    sys.modules.pop("debug_app", None)


def _producer(path: Path) -> Acta:
    app = Acta(path)
    app.define("greet", input=str)
    app.define("flaky", input=int)
    app.define("other")
    return app


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["jobs", "debug", *argv, "--app", "debug_app:app"])
    out, err = capsys.readouterr()
    return code, out, err


def _status(path: Path, ref: str) -> tuple[Any, ...]:
    with closing(sqlite3.connect(path)) as conn:
        row = conn.execute(
            "SELECT status, attempts, executions FROM acta_jobs_view WHERE job_ref = ?", (ref,)
        ).fetchone()
    assert row is not None
    return tuple(row)


def test_a_ready_job_runs_here_after_the_breakpoint_and_settles(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = str(_producer(ledger).enqueue("greet", "ann"))
    code, out, _ = _run(capsys, ref)
    assert code == 0
    assert out == f"{ref}: the run ended completed; the job is succeeded\n"
    assert sys.modules["debug_app"].stops == ["stopped"]
    assert _status(ledger, ref) == ("succeeded", 0, 1)
    assert _producer(ledger).result(ref) == "hello ann"


def test_a_failing_run_is_settled_as_a_retry(
    ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = str(_producer(ledger).enqueue("flaky", 7))
    code, out, _ = _run(capsys, ref, "--no-stop")
    assert code == 1
    assert "the run ended rearmed; the job is ready" in out
    assert sys.modules["debug_app"].stops == []
    assert _status(ledger, ref) == ("ready", 1, 1)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda app: app.enqueue("greet", "bo", delay="1h"), "is not due until"),
        (lambda app: app.enqueue("other"), "has no handler for it"),
        (
            lambda app: app.cancel(app.enqueue("greet", "cy"), "not needed") and None,
            None,
        ),
    ],
    ids=["not-due", "unknown-definition", "finished"],
)
def test_a_job_that_cannot_run_now_is_refused_and_left_alone(
    ledger: Path, capsys: pytest.CaptureFixture[str], make: Any, said: str | None
) -> None:
    app = _producer(ledger)
    ref = make(app)
    if ref is None:  # the cancelled one: find it
        ref = app.jobs(status="cancelled")[0].job_ref
    before = _status(ledger, str(ref))
    code, _, err = _run(capsys, str(ref))
    assert code == 1
    assert (said or "a finished job does not run again") in err
    assert _status(ledger, str(ref)) == before


def test_an_unknown_ref_exits_1(ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "job_01kdvdna00fyavf2nv3s5390yg")
    assert code == 1 and "no job" in err
