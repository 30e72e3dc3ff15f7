"""What the lab shows, read from the ledger alone: backlog, throughput, workers, kills, recoveries.

Every number here comes from the ledger's rows and events, the way an operator with a SQL prompt
would see them, never from counters kept by the lab's own process: the point of the lab is to
watch the database tell the story of a kill. ``Observer.snapshot()`` runs a handful of small
queries; the kills and recoveries are read incrementally (events after the last one seen), so
a ledger with millions of events costs each refresh only what happened since the previous one.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from acta.clock import SystemClock
from acta.model.codes import EventCode, JobStatus, WorkerStatus
from anvil.lab.app import JOB
from anvil.workload import instant

clock = SystemClock()
WINDOW = timedelta(seconds=10)  # the throughput window
FEED_CODES = (
    EventCode.WORKER_STARTED,
    EventCode.WORKER_STOPPED,
    EventCode.WORKER_DIED,
    EventCode.LEASE_LOST,
)
FEED_KEEP = 50  # feed lines kept for the view


@dataclass(frozen=True)
class WorkerRow:
    """One worker incarnation as the ``workers`` table has it."""

    id: int
    pid: int
    status: str
    executors: int
    heartbeat_age_s: float
    leases: int


@dataclass
class Snapshot:
    """One refresh of the view."""

    at: str
    jobs: int = 0
    backlog: int = 0  # not finished: ready, blocked, dispatched, executing, suspended, paused
    ready: int = 0
    dispatched: int = 0
    executing: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    jobs_per_s: float = 0.0  # succeeded in the last WINDOW, per second
    workers: list[WorkerRow] = field(default_factory=list)
    workers_died: int = 0  # worker-died events: kills the ledger has noticed
    leases_lost: int = 0  # lease-lost events: jobs recovery took back from a dead worker
    feed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Observer:
    """Reads one lab ledger; safe to share between threads (one connection, one lock)."""

    def __init__(self, provider: str, database: str, schema: str, dsn: str = "") -> None:
        self.provider, self.database, self.schema, self.dsn = provider, database, schema, dsn
        self._lock = threading.Lock()
        self._conn: Any = None
        self._ids: tuple[int, int] | None = None  # (namespace id, definition id) of JOB
        self._last_event = 0
        self._died = 0
        self._lost = 0
        self._feed: list[str] = []
        self._pids: dict[int, int] = {}

    @property
    def postgres(self) -> bool:
        return self.provider == "postgres"

    def table(self, name: str) -> str:
        return f'"{self.schema}".{name}' if self.postgres else f"{self.schema}_{name}"

    def sql(self, text: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run ``text`` (``{runtime}``-style names filled in, ``?`` placeholders)."""
        names = ("jobs", "runtime", "events", "definitions", "workers")
        query = text.format(**{name: self.table(name) for name in names})
        with self._lock:
            if self._conn is None:
                if self.postgres:
                    self._conn = psycopg.connect(self.dsn, autocommit=True)
                else:
                    self._conn = sqlite3.connect(
                        self.database, isolation_level=None, timeout=30, check_same_thread=False
                    )
            if self.postgres:
                query = query.replace("?", "%s")
            try:
                cursor = self._conn.execute(query, params)
                return list(cursor.fetchall()) if cursor.description else []
            except (psycopg.OperationalError, sqlite3.OperationalError):
                # A broken connection (a restarted server): the next query opens a new one.
                self._conn.close()
                self._conn = None
                raise

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def ids(self) -> tuple[int, int] | None:
        """The namespace and definition ids of the lab job, once some worker registered it."""
        if self._ids is None:
            rows = self.sql("SELECT namespace_id, id FROM {definitions} WHERE name = ?", (JOB,))
            if rows:
                self._ids = (int(rows[0][0]), int(rows[0][1]))
        return self._ids

    def _instant_param(self, at: datetime) -> object:
        # SQLite keeps UTC text with milliseconds (acta.provider.sqlite.transport).
        return at if self.postgres else at.isoformat(" ", "milliseconds")[:23]

    def counts(self) -> Counter[int]:
        """Lab jobs by status code."""
        ids = self.ids()
        if ids is None:
            return Counter()
        rows = self.sql(
            "SELECT status, count(*) FROM {runtime} WHERE definition_id = ? GROUP BY status",
            (ids[1],),
        )
        return Counter({int(status): int(n) for status, n in rows})

    def finished_since(self, since: datetime) -> int:
        ids = self.ids()
        if ids is None:
            return 0
        [(n,)] = self.sql(
            "SELECT count(*) FROM {runtime} WHERE namespace_id = ? AND status >= 100 "
            "AND updated_at >= ? AND definition_id = ?",
            (ids[0], self._instant_param(since), ids[1]),
        )
        return int(n)

    def workers(self, now: datetime) -> list[WorkerRow]:
        held = dict(
            self.sql(
                "SELECT lease_owner, count(*) FROM {runtime} WHERE lease_owner IS NOT NULL "
                "GROUP BY lease_owner"
            )
        )
        rows = self.sql(
            "SELECT id, pid, status, executors, heartbeat_at FROM {workers} ORDER BY id"
        )
        out = []
        for wid, pid, status, executors, beat in rows:
            self._pids[int(wid)] = int(pid)
            out.append(
                WorkerRow(
                    id=int(wid),
                    pid=int(pid),
                    status=WorkerStatus(int(status)).label,
                    executors=int(executors),
                    heartbeat_age_s=round((now - instant(beat)).total_seconds(), 1),
                    leases=int(held.get(wid, 0)),
                )
            )
        return out

    def _read_feed(self) -> None:
        """Fold the worker and lease-lost events written since the last call into the feed."""
        codes = ", ".join(str(int(c)) for c in FEED_CODES)
        rows = self.sql(
            "SELECT e.id, e.at, e.code, e.worker_id FROM {events} e "
            f"WHERE e.id > ? AND e.code IN ({codes}) ORDER BY e.id",
            (self._last_event,),
        )
        lost: Counter[int] = Counter()
        for eid, at, code, worker_id in rows:
            self._last_event = max(self._last_event, int(eid))
            wid = int(worker_id) if worker_id is not None else 0
            pid = self._pids.get(wid, 0)
            stamp = instant(at).strftime("%H:%M:%S")
            if code == EventCode.LEASE_LOST:
                lost[wid] += 1
                self._lost += 1
            elif code == EventCode.WORKER_DIED:
                self._died += 1
                self._feed.append(f"{stamp} worker {wid} (pid {pid}) declared dead by recovery")
            elif code == EventCode.WORKER_STARTED:
                self._feed.append(f"{stamp} worker {wid} started")
            else:
                self._feed.append(f"{stamp} worker {wid} (pid {pid}) stopped cleanly")
        for wid, n in sorted(lost.items()):
            pid = self._pids.get(wid, 0)
            self._feed.append(f"recovery took back {n} job(s) from worker {wid} (pid {pid})")
        del self._feed[:-FEED_KEEP]

    def deaths(self) -> int:
        """``worker-died`` events so far (read incrementally, like the feed)."""
        self._read_feed()
        return self._died

    def snapshot(self) -> Snapshot:
        now = clock.now()
        snap = Snapshot(at=now.isoformat(timespec="seconds"))
        by = self.counts()
        snap.jobs = sum(by.values())
        snap.succeeded = by[JobStatus.SUCCEEDED]
        snap.failed = by[JobStatus.FAILED]
        snap.cancelled = by[JobStatus.CANCELLED]
        snap.backlog = snap.jobs - snap.succeeded - snap.failed - snap.cancelled
        snap.ready = by[JobStatus.READY]
        snap.dispatched = by[JobStatus.DISPATCHED]
        snap.executing = by[JobStatus.EXECUTING]
        snap.jobs_per_s = round(self.finished_since(now - WINDOW) / WINDOW.total_seconds(), 1)
        snap.workers = self.workers(now)
        self._read_feed()
        snap.workers_died, snap.leases_lost = self._died, self._lost
        snap.feed = list(self._feed)
        return snap
