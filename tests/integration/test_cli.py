"""The ``acta`` command line: schema, jobs, worker, demo, exit codes and embedding.

Most tests call ``main([...])`` in-process and read stdout/stderr with capsys, against ledgers
filled by the test host (manual clock, so instants are known). Two tests start real processes:
the installed ``acta demo`` console script, and ``acta worker`` serving one job until SIGTERM.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

import acta.cli
import acta.provider.sqlite
from acta import Acta, JobContext, JobStatus, __version__
from acta.cli import main
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host

_modules = itertools.count()

MIGRATIONS = sorted(
    path.stem
    for path in (Path(acta.provider.sqlite.__file__).parent / "migrations").glob("[0-9]*.sql")
)
"""The SQLite migrations the package ships, by file name."""


@pytest.fixture(autouse=True)
def _no_database_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTA_DATABASE", raising=False)


def _query(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


WriteModule = Callable[[str], str]


@pytest.fixture
def write_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WriteModule]:
    """Write a uniquely named module into the working directory; returns its name."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # load_app adds the cwd; undo that
    written: list[str] = []

    def write(source: str) -> str:
        name = f"cli_test_module_{next(_modules)}"
        (tmp_path / f"{name}.py").write_text(source, "utf-8")
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


# -- a ledger with known contents -----------------------------------------------------------


@dataclass
class Mail:
    to: str


@dataclass
class Filled:
    path: Path
    ok: str
    bad: str
    later: str


@pytest.fixture
def filled(acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider) -> Filled:
    """One job retried then succeeded, one failed for good, one waiting an hour."""

    @acta_app.job("mail.send", backoff="1m", max_attempts=3)
    def send(inp: Mail, ctx: JobContext) -> str:
        if ctx.attempt == 1:
            raise RuntimeError("smtp is down\nsecond line of detail")
        return f"sent to {inp.to}"

    @acta_app.job("report.build", max_attempts=1)
    def build(ctx: JobContext) -> None:
        raise ValueError("no data for the report")

    ok = send.enqueue(Mail("a@example.com"))
    bad = build.enqueue()
    later = send.enqueue(Mail("b@example.com"), delay="1h")
    assert acta_host.tick() == "rearmed"
    assert acta_host.tick() == "failed"
    acta_host.advance("1m")
    assert acta_host.tick() == "completed"
    return Filled(acta_provider.path, str(ok), str(bad), str(later))


# -- version, usage ---------------------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"acta {__version__}"


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().err


# -- schema -----------------------------------------------------------------------------------


def test_schema_apply_then_up_to_date(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.sqlite3"
    assert main(["schema", "apply", "--database", str(path)]) == 0
    out = capsys.readouterr().out
    # Every migration the package ships, each applied once, in order.
    assert "".join(f"applied {name}\n" for name in MIGRATIONS) in out
    assert f"({len(MIGRATIONS)} applied)" in out
    assert _query(path, "SELECT version FROM acta_migrations ORDER BY version") == [
        (int(name[:4]),) for name in MIGRATIONS
    ]
    assert MIGRATIONS[:5] == [
        "0001_ledger",
        "0002_gates",
        "0003_durable",
        "0004_recurring",
        "0005_retention",
    ]

    assert main(["schema", "apply", "--database", f"sqlite:///{path}"]) == 0
    assert "is up to date" in capsys.readouterr().out


def test_schema_apply_with_another_schema_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "jobs.sqlite3"
    assert main(["schema", "apply", "--database", str(path), "--schema", "ops"]) == 0
    assert _query(path, "SELECT name FROM ops_migrations ORDER BY version") == [
        (name[5:],) for name in MIGRATIONS
    ]
    assert main(["jobs", "list", "--database", str(path), "--schema", "ops"]) == 0
    assert "no jobs" in capsys.readouterr().out


def test_schema_sql_is_the_provisioning_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "sql"]) == 0
    script = capsys.readouterr().out
    assert script.startswith("BEGIN IMMEDIATE;")
    assert "CREATE VIEW acta_jobs_view" in script and script.rstrip().endswith("COMMIT;")

    assert main(["schema", "sql", "--schema", "ops"]) == 0
    assert "CREATE TABLE IF NOT EXISTS ops_migrations" in capsys.readouterr().out

    assert main(["schema", "sql", "--schema", "Not-Valid"]) == 2
    assert capsys.readouterr().err.startswith("error: schema:")


def test_schema_sql_for_postgres(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["schema", "sql", "--dialect", "postgres"])
    captured = capsys.readouterr()
    try:
        available = hasattr(importlib.import_module("acta.provider.postgres"), "PostgresProvider")
    except ImportError:
        available = False
    if not available:
        assert code == 2
        assert "postgres extra" in captured.err and "acta-jobs[postgres]" in captured.err
    else:
        assert code == 0 and "CREATE" in captured.out, captured.err


# -- missing schema ---------------------------------------------------------------------------


def test_missing_file_names_the_fix_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "absent.sqlite3"
    assert main(["jobs", "list", "--database", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"acta schema apply --database {path}" in err
    assert not path.exists()


_LEDGER_COMMANDS = [
    ["jobs", "list"],
    ["jobs", "show", "job_" + "0" * 26],
    ["jobs", "events", "job_" + "0" * 26],
    ["schema", "apply"],
]


@pytest.mark.parametrize("command", _LEDGER_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("where", ["absent-file", "existing-ledger", "closed-postgres-port"])
def test_invalid_schema_name_is_a_usage_error_before_anything_is_opened(
    command: list[str], where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 8 item 15: a missing file used to win (exit 1), and its hint suggested
    # `acta schema apply ... --schema Bad-Schema`, a command that refuses that very name.
    path = tmp_path / "ledger.sqlite3"
    if where == "existing-ledger":
        assert main(["schema", "apply", "--database", str(path)]) == 0
        capsys.readouterr()
    before = path.read_bytes() if path.exists() else None
    # Port 1 on loopback has no server: had anything tried to connect, the exit would be 1.
    database = "postgresql://postgres@127.0.0.1:1/test" if where.endswith("port") else str(path)
    code = main([*command, "--database", database, "--schema", "Bad-Schema"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: schema: 'Bad-Schema' is not a plain lowercase identifier")
    assert "acta schema apply" not in err
    assert (path.read_bytes() if path.exists() else None) == before  # not created, not touched


def test_invalid_schema_name_beside_a_host_app(
    filled: Filled, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="myproject")
    acta.cli.add_commands(parser.add_subparsers(dest="command", required=True))
    host = Acta(filled.path)
    try:
        args = parser.parse_args(["jobs", "list", "--schema", "pg_jobs"])
        assert acta.cli.run(args, app=host) == 2
    finally:
        host.close()
    assert capsys.readouterr().err.startswith("error: schema: 'pg_jobs' is reserved by PostgreSQL")


def test_schema_missing_from_an_existing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.sqlite3"
    path.touch()
    assert main(["jobs", "list", "--database", str(path)]) == 1
    err = capsys.readouterr().err
    assert "missing migrations 0001_ledger" in err and "acta schema apply" in err
    assert "Traceback" not in err


def test_outdated_schema_refuses_a_worker(
    tmp_path: Path, write_module: WriteModule, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "jobs.sqlite3"
    assert main(["schema", "apply", "--database", str(path)]) == 0
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM acta_migrations")  # as if the ledger predated 0001
        conn.commit()
    name = write_module(f"from acta import Acta\napp = Acta({str(path)!r})\n")
    capsys.readouterr()
    assert main(["worker", "--app", f"{name}:app"]) == 1
    assert "missing migrations 0001_ledger" in capsys.readouterr().err


# -- jobs -------------------------------------------------------------------------------------


def test_jobs_list_table(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "list", "--database", str(filled.path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "REF", "NAME", "STATUS", "ATTEMPTS", "EXECUTIONS", "NEXT", "RUN", "UPDATED",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert list(rows) == [filled.later, filled.bad, filled.ok]  # newest first
    assert rows[filled.ok][1:6] == ["mail.send", "succeeded", "1/3", "2", "-"]
    assert rows[filled.bad][1:6] == ["report.build", "failed", "1/1", "1", "-"]
    assert rows[filled.later][1:5] == ["mail.send", "ready", "0/3", "0"]
    assert rows[filled.later][5:7] == ["2026-01-01", "01:00:00Z"]
    # Columns line up: every ref is the same length, so the names start at one offset.
    starts = {line.index(" mail.") for line in lines[1:] if " mail." in line}
    assert len(starts) == 1


def test_jobs_list_filters_and_limits(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(filled.path)]
    assert main(["jobs", "list", *db, "--status", "failed", "--json"]) == 0
    assert [j["job_ref"] for j in json.loads(capsys.readouterr().out)] == [filled.bad]
    assert main(["jobs", "list", *db, "--name", "mail.send", "--limit", "1", "--json"]) == 0
    assert [j["job_ref"] for j in json.loads(capsys.readouterr().out)] == [filled.later]
    assert main(["jobs", "list", *db, "--namespace", "elsewhere"]) == 0
    assert "no jobs in namespace 'elsewhere' match" in capsys.readouterr().out
    assert main(["jobs", "list", *db, "--all-namespaces", "--include-system"]) == 0
    out = capsys.readouterr().out
    assert "NAMESPACE" in out and "sys.recovery" in out

    assert main(["jobs", "list", *db, "--limit", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: limit:")
    assert main(["jobs", "list", *db, "--status", "bogus"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_jobs_list_json(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "list", "--database", str(filled.path), "--json"]) == 0
    jobs = {j["job_ref"]: j for j in json.loads(capsys.readouterr().out)}
    ok = jobs[filled.ok]
    assert ok["status"] == "succeeded" and ok["name"] == "mail.send"
    assert (ok["attempts"], ok["max_attempts"], ok["executions"]) == (1, 3, 2)
    assert ok["created_at"] == "2026-01-01T00:00:00.000Z"
    assert datetime.fromisoformat(ok["updated_at"]).isoformat() == "2026-01-01T00:01:00+00:00"
    assert jobs[filled.later]["next_run_at"] == "2026-01-01T01:00:00.000Z"


def test_jobs_show(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "show", filled.ok, "--database", str(filled.path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == filled.ok
    fields = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()[1:]}
    assert fields["status"] == "succeeded"
    assert fields["attempts"].startswith("1/3")
    assert fields["input"] == '{"to": "a@example.com"}'
    assert fields["result"] == '"sent to a@example.com"'
    assert "smtp is down (run #1, handler-error)" in out
    assert "second line" not in out  # only a message's first line is shown


def test_jobs_show_json(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "show", filled.bad, "--database", str(filled.path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["job_ref"] == filled.bad and data["status"] == "failed"
    assert data["input"] is None and data["result"] is None
    assert data["last_error"]["event"] in ("execution-finished", "failed")
    assert "no data for the report" in data["last_error"]["message"]


def test_jobs_events_timeline(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "events", filled.ok, "--database", str(filled.path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [filled.ok, "mail.send", "succeeded"]
    assert lines[1].split()[:4] == ["AT", "SINCE", "RUN", "EVENT"]
    body = lines[2:]
    assert body[0].split()[:4] == ["2026-01-01", "00:00:00.000Z", "+0.000s", "enqueued"]
    failed = next(line for line in body if "handler-error" in line and "failed" in line)
    assert "#1" in failed and "RuntimeError: smtp is down" in failed
    assert "second line" not in failed
    last = body[-1].split()
    assert last[2:5] == ["+1m00.0s", "#2", "succeeded"]


def test_jobs_events_json(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "events", filled.ok, "--database", str(filled.path), "--json"]) == 0
    events = json.loads(capsys.readouterr().out)
    assert [e["event"] for e in events] == [
        "enqueued",
        "execution-started",
        "execution-finished",
        "retry-scheduled",
        "execution-started",
        "execution-finished",
        "succeeded",
    ]
    finished = [e for e in events if e["event"] == "execution-finished"]
    assert [(e["execution"], e["outcome"]) for e in finished] == [(1, "failed"), (2, "succeeded")]
    assert finished[0]["reason"] == "handler-error"
    assert all(datetime.fromisoformat(e["at"]).tzinfo is not None for e in events)


def test_bad_and_unknown_refs(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--database", str(filled.path)]
    assert main(["jobs", "show", "job_nope", *db]) == 2
    assert capsys.readouterr().err.startswith("error: job ref:")
    assert main(["jobs", "events", "not-a-ref", *db]) == 2
    assert capsys.readouterr().err.startswith("error: job ref:")
    unknown = "job_" + "0" * 26
    assert main(["jobs", "show", unknown, *db]) == 1
    assert capsys.readouterr().err.strip() == f"error: no job {unknown} in namespace 'default'"
    assert main(["jobs", "events", unknown, *db]) == 1
    assert "no job" in capsys.readouterr().err


def test_jobs_through_app_option(
    filled: Filled, write_module: WriteModule, capsys: pytest.CaptureFixture[str]
) -> None:
    name = write_module(f"from acta import Acta\napp = Acta({str(filled.path)!r})\n")
    assert main(["jobs", "list", "--app", f"{name}:app", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3
    assert main(["jobs", "show", filled.ok, "--app", f"{name}:app"]) == 0
    assert "succeeded" in capsys.readouterr().out
    assert main(["jobs", "list", "--app", f"{name}:app", "--schema", "ops"]) == 2
    assert "--schema cannot be combined with --app" in capsys.readouterr().err


def test_embedding_in_a_host_cli(filled: Filled, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="myproject")
    commands = parser.add_subparsers(dest="command", required=True)
    admin = commands.add_parser("jobs-admin")
    acta.cli.add_commands(admin.add_subparsers(metavar="COMMAND", required=True))
    host_app = Acta(filled.path)
    try:
        args = parser.parse_args(["jobs-admin", "jobs", "list", "--status", "ready", "--json"])
        assert args.command == "jobs-admin"
        assert acta.cli.run(args, app=host_app) == 0
        assert [j["job_ref"] for j in json.loads(capsys.readouterr().out)] == [filled.later]
        args = parser.parse_args(["jobs-admin", "jobs", "show", "job_bad"])
        assert acta.cli.run(args, app=host_app) == 2
    finally:
        host_app.close()
    assert isinstance(acta.cli.build_parser(), argparse.ArgumentParser)


# -- worker: --app errors ---------------------------------------------------------------------


def test_worker_app_import_errors(
    write_module: WriteModule, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", "--app", "no_such_module_for_acta:app"]) == 2
    assert "cannot import module 'no_such_module_for_acta'" in capsys.readouterr().err

    name = write_module("from acta import Acta\napp = Acta('jobs.sqlite3')\nnot_app = 42\n")
    assert main(["worker", "--app", f"{name}:missing"]) == 2
    assert f"{name!r} has no attribute 'missing'" in capsys.readouterr().err

    assert main(["worker", "--app", f"{name}:not_app"]) == 2
    assert "is a int, not an acta.Acta application" in capsys.readouterr().err

    assert main(["worker", "--app", name]) == 2
    assert "expected MODULE:ATTRIBUTE" in capsys.readouterr().err

    assert main(["worker"]) == 2
    assert "needs --app" in capsys.readouterr().err


def test_worker_app_whose_import_raises(
    write_module: WriteModule, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = write_module("import no_such_dependency_for_acta\n")
    assert main(["worker", "--app", f"{broken}:app"]) == 1
    err = capsys.readouterr().err
    assert "importing the module failed: ModuleNotFoundError" in err
    assert err.rstrip().splitlines()[-1].startswith("error: --app")

    invalid = write_module(
        "from acta import Acta\napp = Acta('j.sqlite3')\n"
        "@app.job('Bad Name')\ndef f() -> None: ...\n"
    )
    assert main(["worker", "--app", f"{invalid}:app"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: job name:") and "Traceback" not in err


def test_worker_option_validation(
    write_module: WriteModule, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", "--app", "x:app", "--heartbeat", "soon"]) == 2
    assert "--heartbeat" in capsys.readouterr().err
    name = write_module("from acta import Acta\napp = Acta('jobs.sqlite3')\n")
    args = ["worker", "--app", f"{name}:app", "--apply-migrations", "--heartbeat", "2h"]
    assert main(args) == 2
    assert capsys.readouterr().err.startswith("error: heartbeat:")


def test_demo_never_deletes_a_file_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine.sqlite3"
    assert main(["schema", "apply", "--database", str(mine)]) == 0  # an empty real ledger
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database", "utf-8")
    capsys.readouterr()
    for path in (mine, notes):
        before = path.read_bytes()
        assert main(["demo", "--database", str(path)]) == 2
        assert "is not an acta demo ledger" in capsys.readouterr().err
        assert path.read_bytes() == before


# -- real processes ---------------------------------------------------------------------------


def _acta_command() -> list[str]:
    script = Path(sys.executable).with_name("acta")
    return [str(script)] if script.exists() else [sys.executable, "-m", "acta.cli"]


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ACTA_DATABASE"}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def test_demo_console_script(tmp_path: Path) -> None:
    done = subprocess.run(
        [*_acta_command(), "demo"],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "succeeded" in done.stdout
    assert 'sqlite3 acta-demo.sqlite3 "SELECT job_ref' in done.stdout
    assert "FROM acta_events_view" in done.stdout
    [(status, executions)] = _query(
        tmp_path / "acta-demo.sqlite3",
        "SELECT status, executions FROM acta_jobs_view WHERE job_name = 'demo.say-hello'",
    )
    assert (status, executions) == ("succeeded", 2)


WORKER_MODULE = """
from acta import Acta, JobContext

app = Acta("ledger.sqlite3")


@app.job("cli.ping")
def ping(ctx: JobContext) -> str:
    ctx.logger.info("ping handled")
    return "pong"
"""


def test_worker_serves_until_sigterm(tmp_path: Path) -> None:
    (tmp_path / "cli_worker_app.py").write_text(WORKER_MODULE, "utf-8")
    path = tmp_path / "ledger.sqlite3"
    producer = Acta(path, apply_migrations=True)
    ref = str(producer.define("cli.ping").enqueue())
    producer.close()

    command = [*_acta_command(), "worker", "--app", "cli_worker_app:app"]
    command += ["--heartbeat", "0.2s", "--poll", "0.05s"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    log = b""
    status = None
    try:
        # Wait on the worker's log output, at most 300 rounds of 0.1 s; each round also looks
        # at the ledger, since the settle is written just after the handler logs.
        for _ in range(300):
            ready, _, _ = select.select([proc.stderr], [], [], 0.1)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 65536)
                assert chunk, f"the worker exited early:\n{log.decode()}"
                log += chunk
            [(status,)] = _query(
                path, "SELECT status FROM acta_jobs_view WHERE job_ref = ?", (ref,)
            )
            if status == "succeeded":
                break
        assert status == "succeeded", log.decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
    log += rest
    # Read after the exit: the settle can be seen in the ledger before its log line is read.
    assert b"registered" in log and b"ping handled" in log
    assert proc.returncode == 0, log.decode()
    assert b"Traceback" not in log
    assert b"stopped" in log
    assert _query(path, "SELECT status FROM acta_workers_view") == [("stopped",)]
    assert _query(path, "SELECT status_code FROM acta_jobs_view WHERE job_ref = ?", (ref,)) == [
        (int(JobStatus.SUCCEEDED),)
    ]


def test_worker_refuses_an_event_retention_out_of_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "retention_app.py").write_text(WORKER_MODULE, "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    Acta(tmp_path / "ledger.sqlite3", apply_migrations=True).migrate()
    monkeypatch.setenv("ACTA_DATABASE", str(tmp_path / "ledger.sqlite3"))
    code = main(["worker", "--app", "retention_app:app", "--event-retention", "1h"])
    assert code == 2
    assert "event_retention" in capsys.readouterr().err
    sys.modules.pop("retention_app", None)
