"""What ``acta jobs show`` and ``acta jobs events`` say about a job retention purged: its name,
final status and the instants it finished and was purged, then its timeline (events outlive the
job), through real runs of ``main()`` on a SQLite ledger file filled by the test host.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acta import Acta, JobRef
from acta.cli import main
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)


def _run(path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main([*argv, "--database", str(path)])
    out, _ = capsys.readouterr()
    return code, out


@pytest.fixture
def purged(acta_app: Acta, acta_host: Host) -> str:
    """A job that succeeded at 2026-01-01 00:00 and was purged an hour later."""

    @acta_app.job("receipt.mail", retention="1h")
    def mail(n: int) -> int:
        return n

    @acta_app.job("keep", retention=None)
    def keep(n: int) -> int:
        return n

    ref = mail.enqueue(1)
    keep.enqueue(2)  # SQLite keeps the newest job row; this one is newer
    assert acta_host.run_until_idle() == 2
    acta_host.advance("1h")
    acta_host.tick()  # sys.retention is due: it purges the receipt job
    return str(ref)


def test_show_says_a_job_was_purged_and_prints_its_timeline(
    purged: str, acta_provider: SqliteProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(acta_provider.path, capsys, "jobs", "show", purged)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == purged
    assert lines[1].split() == ["name", "receipt.mail"]
    assert lines[2].split(None, 1) == ["status", "succeeded, purged by retention"]
    assert lines[3].split(None, 1) == ["finished", "2026-01-01 00:00:00.000Z"]
    assert lines[4].split(None, 1) == ["purged", "2026-01-01 01:00:00.000Z"]
    assert "enqueued" in out and "execution-finished" in out  # the kept timeline


def test_show_json_and_events_of_a_purged_job(
    purged: str, acta_provider: SqliteProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(acta_provider.path, capsys, "jobs", "show", purged, "--json")
    assert code == 0
    data = json.loads(out)
    assert (data["name"], data["status"], data["purged"]) == ("receipt.mail", "succeeded", True)
    assert data["purged_at"].startswith("2026-01-01T01:00:00")
    assert data["events"][0]["event"] == "enqueued"

    code, out = _run(acta_provider.path, capsys, "jobs", "events", purged)
    assert code == 0
    assert out.splitlines()[0] == f"{purged}  receipt.mail  succeeded, purged"


def test_an_unknown_ref_is_still_not_found(
    purged: str, acta_provider: SqliteProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = str(JobRef.new(1_700_000_000_000))
    capsys.readouterr()
    code = main(["jobs", "show", unknown, "--database", str(acta_provider.path)])
    _, err = capsys.readouterr()
    assert code == 1
    assert f"no job {unknown}" in err
