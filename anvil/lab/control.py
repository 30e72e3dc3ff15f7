"""The ``Lab``: one fresh ledger, its worker fleet, a producer, and the controls on them.

The controls are the ones the views offer: ``enqueue(n)`` (batched, in a background thread,
with progress), ``add_worker()``, ``kill_worker()`` (SIGKILL) and ``stop()`` (a graceful stop of
every worker). Everything the views display about jobs and workers comes from ``Observer``
(the ledger); the lab adds only what the ledger cannot know: how far its own enqueue has got,
and which processes it killed. All methods are safe to call from several threads (the terminal
loop, the page's request handlers).
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from acta import Acta
from acta.clock import SystemClock
from acta.errors import DatabaseUnavailableError
from anvil.lab import app as lab_app
from anvil.lab.fleet import Fleet, Worker
from anvil.lab.observe import Observer, Snapshot

clock = SystemClock()
BATCH = 2_000  # jobs per enqueue transaction: big enough to be cheap, small enough to show progress
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
MAX_ENQUEUE = 10_000_000
MAINTAIN_EVERY = 60.0  # seconds between the lab's VACUUM (ANALYZE) of runtime (PostgreSQL)


@dataclass
class Options:
    """How to set up one lab."""

    provider: str = "postgres"
    dsn: str = DEFAULT_DSN
    database: str | None = None  # SQLite file; default: lab.sqlite3 in the work directory
    workdir: Path | None = None
    executors: int = lab_app.EXECUTORS
    heartbeat: float = lab_app.HEARTBEAT
    poll: float = lab_app.POLL
    profile: str = lab_app.PROFILE  # the workers' execution profile
    work_ms: int = 0  # how long each lab job takes
    keep: bool = False  # keep the ledger (schema or file) after the lab ends


@dataclass
class Progress:
    """The producer's progress: jobs asked for, and written so far."""

    asked: int = 0
    written: int = 0
    started: float = 0.0
    seconds: float = 0.0
    error: str = ""
    events: list[str] = field(default_factory=list)


class Lab:
    """A running lab; use as a context manager (``close`` stops workers, drops the ledger)."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self._own_workdir = options.workdir is None
        self.workdir = options.workdir or Path(tempfile.mkdtemp(prefix="acta-lab-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        if options.provider == "postgres":
            self.database, self.schema = options.dsn, f"acta_lab_{secrets.token_hex(4)}"
        else:
            self.database = options.database or str(self.workdir / "lab.sqlite3")
            self.schema = "acta"
        producer = Acta(self.database, schema=self.schema)
        try:
            producer.migrate()
        finally:
            producer.close()
        self.producer = lab_app.build(self.database, self.schema)
        self.observer = Observer(options.provider, self.database, self.schema, options.dsn)
        env = lab_app.worker_env(
            self.database,
            self.schema,
            executors=options.executors,
            heartbeat=options.heartbeat,
            poll=options.poll,
            profile=options.profile,
        )
        self.fleet = Fleet(env, self.workdir)
        self.progress = Progress()
        self.actions: list[str] = []  # what the lab did (kills, adds), for the feed
        self._lock = threading.Lock()
        self._enqueuer: threading.Thread | None = None
        self._stopping = threading.Event()
        self._next_upkeep = 0.0
        self.upkeeps = 0

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- workers --------------------------------------------------------------------------

    def registered(self, pid: int) -> bool:
        """Whether the ledger has an active worker with this process id."""
        rows = self.observer.sql(
            "SELECT count(*) FROM {workers} WHERE pid = ? AND status = 1", (pid,)
        )
        return bool(rows[0][0])

    def start_workers(self, count: int) -> list[Worker]:
        workers = [self.fleet.spawn() for _ in range(count)]
        self.fleet.wait_registered(workers, self.registered, 60)
        for w in workers:
            self.note(f"started worker process {w.number} (pid {w.pid})")
        return workers

    def add_worker(self) -> Worker:
        return self.start_workers(1)[0]

    def kill_worker(self, pid: int | None = None) -> Worker | None:
        """SIGKILL one worker (``pid``, or a random live one)."""
        victim = self.fleet.kill(pid)
        if victim is not None:
            self.note(f"SIGKILL sent to worker process {victim.number} (pid {victim.pid})")
        return victim

    def stop(self) -> None:
        """Stop enqueueing and shut every worker down gracefully."""
        self._stopping.set()
        if self._enqueuer is not None:
            self._enqueuer.join()
        self.fleet.stop()
        self.note("all workers stopped")

    def stopped(self) -> bool:
        return self._stopping.is_set()

    def wait_stopped(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``stop``; whether it came."""
        return self._stopping.wait(timeout)

    def note(self, text: str) -> None:
        with self._lock:
            self.actions.append(f"{clock.now():%H:%M:%S} {text}")
            del self.actions[:-50]

    # -- jobs -----------------------------------------------------------------------------

    def enqueue(self, count: int) -> None:
        """Ask for ``count`` more jobs; a background thread writes them in batches."""
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_ENQUEUE:
            raise ValueError(
                f"enqueue count: got {count!r}; allowed: an int from 1 to {MAX_ENQUEUE:,}"
            )
        with self._lock:
            if self.progress.asked == self.progress.written:
                self.progress.started = clock.monotonic()
            self.progress.asked += count
            running = self._enqueuer is not None and self._enqueuer.is_alive()
            if not running:
                self._enqueuer = threading.Thread(
                    target=self._write, name="lab-enqueue", daemon=True
                )
                self._enqueuer.start()

    def _write(self) -> None:
        ms = self.options.work_ms
        while not self._stopping.is_set():
            with self._lock:
                n = min(BATCH, self.progress.asked - self.progress.written)
            if n <= 0:
                return
            try:
                self.producer.enqueue_batch(
                    [self.producer.request(lab_app.JOB, ms) for _ in range(n)]
                )
            except DatabaseUnavailableError as exc:
                # An outage (a restarted server): wait and go on from what the ledger holds, since
                # a batch whose commit reply was lost may or may not be there.
                self.note(f"enqueue waits for the database: {exc}")
                self._resync()
                continue
            except Exception as exc:  # the view shows it; the lab goes on without it
                with self._lock:
                    self.progress.error = f"{type(exc).__name__}: {exc}"
                    self.progress.asked = self.progress.written
                return
            with self._lock:
                self.progress.written += n
                self.progress.seconds = clock.monotonic() - self.progress.started

    def _resync(self) -> None:
        """After a failed batch: set ``written`` to the lab jobs the ledger has (only this
        thread writes them), once the ledger answers again."""
        while not self._stopping.wait(1.0):
            try:
                held = sum(self.observer.counts().values())
            except Exception:  # still unreachable
                continue
            with self._lock:
                self.progress.written = held
            return

    def enqueue_done(self) -> bool:
        with self._lock:
            return self.progress.written >= self.progress.asked

    def wait_enqueued(self) -> None:
        if self._enqueuer is not None:
            self._enqueuer.join()
        if self.progress.error:
            raise RuntimeError(f"enqueue failed: {self.progress.error}")

    # -- upkeep ---------------------------------------------------------------------------

    def maintain(self) -> str | None:
        """On PostgreSQL, ``VACUUM (ANALYZE)`` the lab's ``runtime`` table at most every
        ``MAINTAIN_EVERY`` seconds; what it did, or None.

        A server with autovacuum off (the test server here is one) never refreshes the table's
        statistics: after a bulk enqueue the planner still believes the table is empty and the
        claim sorts the whole backlog on every call (seconds per claim at a million jobs).
        The lab does what an operator of such a server must do, and says so in its feed."""
        if self.options.provider != "postgres" or clock.monotonic() < self._next_upkeep:
            return None
        self._next_upkeep = clock.monotonic() + MAINTAIN_EVERY
        started = clock.monotonic()
        try:
            self.observer.sql("VACUUM (ANALYZE) {runtime}")
        except psycopg.Error as exc:
            return f"VACUUM (ANALYZE) runtime failed: {exc}"
        self.upkeeps += 1
        done = f"VACUUM (ANALYZE) runtime in {clock.monotonic() - started:.1f} s"
        self.note(done)
        return done

    # -- what the views show --------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return self.observer.snapshot()

    def state(self) -> dict[str, Any]:
        """The snapshot plus the lab's own progress and processes, as JSON-ready data."""
        snap = self.snapshot().to_json()
        with self._lock:
            p = self.progress
            snap["enqueue"] = {
                "asked": p.asked,
                "written": p.written,
                "seconds": round(p.seconds, 1),
                "error": p.error,
            }
            snap["actions"] = list(self.actions)
        snap["processes"] = [
            {"number": w.number, "pid": w.pid, "alive": w.alive(), "killed": w.killed}
            for w in self.fleet.all()
        ]
        snap["kills_sent"] = self.fleet.kills
        snap["provider"] = self.options.provider
        snap["schema"] = self.schema
        return snap

    # -- teardown -------------------------------------------------------------------------

    def close(self) -> None:
        self._stopping.set()
        if self._enqueuer is not None:
            self._enqueuer.join()
        self.fleet.stop()
        self.producer.close()
        self.observer.close()
        if not self.options.keep:
            self._drop()
        if self._own_workdir and not self.options.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _drop(self) -> None:
        if self.options.provider == "postgres":
            with psycopg.connect(self.options.dsn, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema))
                )
        else:
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    Path(self.database + suffix).unlink()
