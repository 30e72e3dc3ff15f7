"""``acta demo``: a two-second tour of acta that needs nothing but this package.

It creates a SQLite ledger (``./acta-demo.sqlite3`` by default), declares one job whose
handler fails on its first attempt and succeeds on the retry, enqueues it, runs a real worker
until the job is finished, and prints what happened, the job's event timeline and the SQL to
look at the same rows yourself. It exits 0 only if the job succeeded, so it doubles as a smoke
test of an installation.

Time comes from the application's clock like everywhere else in acta; the tour waits on the
ledger (polled at the worker's own poll interval), never on a fixed sleep.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import sqlite3
import sys
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from acta.app import Acta
from acta.cli import render
from acta.cli.command import EXIT_FAILURE, EXIT_OK, HANDLER, UsageError
from acta.context import JobContext
from acta.duration import format_duration
from acta.model.codes import JobStatus
from acta.model.rows import EventInfo, JobInfo
from acta.provider.factory import sqlite_path

DEMO_DATABASE = "acta-demo.sqlite3"
JOB_NAME = "demo.say-hello"
BACKOFF = "1s"
HEARTBEAT = timedelta(seconds=1)
POLL = timedelta(milliseconds=50)
TIMEOUT = timedelta(seconds=30)
_SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass
class Hello:
    """The demo job's input."""

    name: str


def say_hello(hello: Hello, ctx: JobContext) -> str:
    """The demo handler: the first attempt fails on purpose, so the tour shows a retry."""
    if ctx.attempt == 1:
        raise ConnectionError("greeting service unavailable (a staged failure to show a retry)")
    return f"Hello, {hello.name}!"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo`` to a subcommand set."""
    demo = commands.add_parser(
        "demo",
        help="a zero-setup tour: one job, one retry, one worker, the SQL to inspect it",
        description=(
            "Create a SQLite ledger, run a job that fails once and then succeeds on a real "
            "worker, and print its timeline and the SQL to inspect it. Exits 0 if it succeeded."
        ),
    )
    demo.add_argument(
        "--database",
        metavar="PATH",
        default=DEMO_DATABASE,
        help=f"SQLite file for the demo ledger (default: ./{DEMO_DATABASE})",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="keep the jobs of earlier demo runs instead of starting from a fresh file",
    )
    demo.set_defaults(**{HANDLER: command})


def command(args: argparse.Namespace, host_app: Acta | None) -> int:
    path = sqlite_path(str(args.database))
    if path is None:
        raise UsageError(f"--database {args.database}: the demo runs on a SQLite file path")
    if not args.keep:
        _start_fresh(Path(path))
    where = "existing file" if Path(path).exists() else "new file"

    app = Acta(path)
    job = app.job(JOB_NAME, backoff=BACKOFF, max_attempts=3)(say_hello)
    try:
        applied = app.migrate()
        schema = f"applied {', '.join(applied)}" if applied else "schema up to date"
        hello = Hello("world")
        ref = str(job.enqueue(hello))
        _say("acta demo: one job that fails once, is retried, and succeeds\n")
        _say(f"  ledger    {path} ({where}; {schema})")
        _say(f"  job       {JOB_NAME}: first attempt fails, retry after {BACKOFF}")
        _say(f"  enqueued  {ref} with input {render.compact(asdict(hello))}")
        _say(
            f"  worker    running (heartbeat {format_duration(HEARTBEAT)}, "
            f"poll {format_duration(POLL)}) until the job finishes..."
        )
        info, events, result = asyncio.run(_serve(app, ref))
    finally:
        app.close()

    _say("\nWhat happened")
    took = format_duration(info.updated_at - info.created_at)
    pairs = [
        ("status", info.status.label),
        ("attempts", f"{render.attempts(info)} (failed attempts spent / allowed)"),
        ("executions", f"{info.executions} (handler runs)"),
        ("took", f"{took} from enqueue to the last update"),
    ]
    if info.status is JobStatus.SUCCEEDED:
        pairs.append(("result", render.compact(result)))
    _say(render.labelled(f"  {ref}", [(f"  {k}", v) for k, v in pairs]))
    _say("\nTimeline (oldest first)")
    _say(_indent(render.timeline(events)))
    _say("\nLook at it yourself")
    _say(_indent("\n".join(hints(path, ref))))
    _say("  (the sys.recovery row is acta's own upkeep: lease recovery runs as an ordinary job)")
    if info.status is not JobStatus.SUCCEEDED:
        if info.status.terminal:
            problem = f"the demo job ended {info.status.label} instead of succeeding"
        else:
            problem = (
                f"the demo job did not finish within {format_duration(TIMEOUT)} "
                f"(status {info.status.label})"
            )
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def hints(path: str, ref: str) -> list[str]:
    """Shell commands that show the demo's rows: the curated views, then the CLI."""
    db = shlex.quote(path)
    jobs_sql = (
        "SELECT job_ref, job_name, status, attempts, executions, last_error FROM acta_jobs_view"
    )
    events_sql = (
        "SELECT at, event, execution, outcome, reason, worker FROM acta_events_view "
        f"WHERE job_ref = '{ref}' ORDER BY event_id"
    )
    return [
        f'sqlite3 {db} "{jobs_sql}"',
        f'sqlite3 {db} "{events_sql}"',
        f"acta jobs show {ref} --database {db}",
        f"acta jobs events {ref} --database {db}",
    ]


async def _serve(app: Acta, ref: str) -> tuple[JobInfo, list[EventInfo], Any]:
    """Run a worker until the job is terminal (or the safety timeout), then stop it cleanly."""
    worker = app.worker(heartbeat=HEARTBEAT, poll=POLL, shutdown_grace=timedelta(seconds=5))
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))
    deadline = app.clock.now() + TIMEOUT
    try:
        while True:
            info = await app.get_async(ref)
            # A crashed worker task also ends the wait, so its error surfaces below.
            if info.status.terminal or serving.done() or app.clock.now() >= deadline:
                break
            await app.clock.sleep_until(app.clock.now() + POLL, stopping)
    finally:
        stopping.set()
        await serving
    events = await app.events_async(ref)
    result = await app.result_async(ref) if info.status is JobStatus.SUCCEEDED else None
    await app.provider.aclose()
    return info, events, result


def _start_fresh(path: Path) -> None:
    """Remove an earlier demo ledger so this run's output stands alone.

    Only a file that holds nothing but an acta ledger with demo jobs is removed: pointing
    ``--database`` at real data by mistake must never delete it.
    """
    if not path.exists():
        return
    if not _is_demo_ledger(path):
        raise UsageError(
            f"{path} already exists and is not an acta demo ledger; choose another "
            "--database, or pass --keep to add the demo job to it"
        )
    for name in (str(path), *(str(path) + suffix for suffix in _SIDE_FILES)):
        Path(name).unlink(missing_ok=True)


def _is_demo_ledger(path: Path) -> bool:
    if path.is_file() and path.stat().st_size == 0:
        return True
    try:
        uri = path.resolve().as_uri() + "?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
            if any(not name.startswith(("acta_", "sqlite_")) for name in tables):
                return False
            if "acta_definitions" not in tables:
                return not tables
            names = [row[0] for row in conn.execute("SELECT name FROM acta_definitions")]
    except sqlite3.Error:
        return False  # not a SQLite file at all: certainly not ours to delete
    # An acta ledger is ours only if the demo wrote to it and nothing else did.
    return JOB_NAME in names and all(name.startswith(("demo.", "sys.")) for name in names)


def _say(text: str) -> None:
    print(text, flush=True)  # flushed so the tour reads live when piped


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else line for line in text.splitlines())
