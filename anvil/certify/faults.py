"""The faults a certification injects, on a schedule drawn from the run's seed.

``plan`` turns a seed and a tier into a list of ``Fault`` (when, what), fixed before the run
starts, so ``--seed S`` replays the same schedule. ``Injector`` carries them out against the
fleet and the database, and logs each one as it happened (``FaultRecord``). The kinds:

- ``kill``: SIGKILL a worker that holds executing jobs (any live one if none does), and start
  a replacement at once; a zombie woken less than ``WAKE_GRACE`` ago is spared;
- ``zombie``: SIGSTOP a busy worker, start a replacement, and SIGCONT the frozen one only
  after recovery took its leases (lease-lost events name it) or 10 s (SQLite) or 20 s
  (PostgreSQL) passed: when it wakes, every write it tries must be fenced;
- ``backends`` (PostgreSQL): ``pg_terminate_backend`` on one to three of this run's worker
  sessions (found by ``application_name``), cutting connections mid-transaction;
- ``restart`` (PostgreSQL, Tier B): restart the server once (``pg_ctlcluster ... restart``);
- ``lock`` (SQLite): a second writer takes the write lock (BEGIN IMMEDIATE) and holds it past
  the workers' busy_timeout (5 s), so their writes fail with SQLITE_BUSY and must be retried;
  it waits up to ``LOCK_WAIT`` per try for the lock and tries again later if refused.

Which worker a fault hits is drawn from the same seeded source, among the workers busy at that
moment, so a replay hits the same schedule but, with different timings, maybe other workers.
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import threading
from dataclasses import asdict, dataclass
from typing import Any

from anvil.certify.fleet import Fleet, Worker, clock
from anvil.certify.ledger import Ledger, reconnect

LOCK_SECONDS = 6.0  # past the workers' 5 s busy_timeout
LOCK_WAIT = 10.0  # how long one try at taking the lock waits for the busy workers
# How long a zombie sleeps at most when no lease of it lapses: on SQLite a process frozen while
# it holds the file's write lock stalls every writer (recovery too) until it wakes, so short.
ZOMBIE_WAIT = {"sqlite": 10.0, "postgres": 20.0}
# How long a woken zombie is spared from kills: its writes after the wake are what the zombie
# proves (fenced, or caught by the checks when fencing is broken), and a CI run killed both of a
# test's zombies 0.4 s and 1.3 s after waking, before either wrote anything.
WAKE_GRACE = 3.0
RESTART = ["pg_ctlcluster", "--skip-systemctl-redirect", "15", "main", "restart"]

# Live worker processes executing jobs now.
EXECUTING = (
    "SELECT DISTINCT w.pid FROM {schema}.runtime r JOIN {schema}.workers w "
    "ON w.id = r.lease_owner WHERE r.status = 21"
)
LOST_BY = (
    "SELECT count(*) FROM {schema}.events e JOIN {schema}.workers w ON w.id = e.worker_id "
    "WHERE e.code = 30 AND w.pid = :pid AND e.id > :after"
)
NEWEST = "SELECT COALESCE(max(id), 0) FROM {schema}.events"


@dataclass(frozen=True)
class Fault:
    """One planned fault: ``at`` seconds after the workers started, of ``kind``."""

    at: float
    kind: str


@dataclass
class FaultRecord:
    """One fault as it happened."""

    at: float
    kind: str
    target: str
    detail: str


def plan(
    seed: int,
    provider: str,
    window: float,
    kill_every: float,
    zombies: int,
    restarts: int,
    backends_every: float,
    locks: int,
) -> list[Fault]:
    """The fault schedule of a run: kills every ``kill_every`` s (+-25%) over ``window`` s,
    ``zombies`` stops, and per provider backend terminations or lock holds; sorted by time."""
    rng = random.Random(f"faults-{seed}")
    faults: list[Fault] = []
    at = kill_every
    while at < window:
        faults.append(Fault(round(at, 2), "kill"))
        at += kill_every * rng.uniform(0.75, 1.25)
    for _ in range(zombies):
        faults.append(Fault(round(rng.uniform(0.2, 0.6) * window, 2), "zombie"))
    if provider == "postgres":
        at = backends_every
        while at < window:
            faults.append(Fault(round(at + rng.uniform(-1, 1), 2), "backends"))
            at += backends_every
        for _ in range(restarts):
            faults.append(Fault(round(rng.uniform(0.4, 0.6) * window, 2), "restart"))
    else:
        for _ in range(locks):
            faults.append(Fault(round(rng.uniform(0.3, 0.8) * window, 2), "lock"))
    return sorted(faults, key=lambda f: f.at)


class Injector:
    """Carries out a fault plan against ``fleet`` and ``ledger``; ``log`` is what happened."""

    def __init__(self, fleet: Fleet, ledger: Ledger, faults: list[Fault], seed: int) -> None:
        self.fleet = fleet
        self.ledger = ledger
        self.pending = list(faults)
        self.rng = random.Random(f"victims-{seed}")
        self.log: list[FaultRecord] = []
        self.zombie: tuple[Worker, float, int] | None = None
        self.lock: tuple[threading.Thread, threading.Event] | None = None
        self.retries: dict[tuple[str, str], int] = {}
        self.woken: dict[int, float] = {}  # pid -> when it was woken

    def tick(self, elapsed: float) -> None:
        """Fire the faults due by ``elapsed``; end a zombie's sleep or a lock hold when due."""
        if self.zombie is not None:
            self._maybe_wake(elapsed)
        if self.lock is not None and not self.lock[0].is_alive():
            self._release(elapsed)
        while self.pending and self.pending[0].at <= elapsed:
            fault = self.pending.pop(0)
            getattr(self, f"_{fault.kind}")(elapsed)

    def finish(self, elapsed: float) -> list[Fault]:
        """End the zombie's sleep and any lock hold; the faults never fired (the run drained
        first)."""
        if self.zombie is not None:
            self._wake(elapsed, "the run drained")
        if self.lock is not None:
            self._release(elapsed)
        left, self.pending = self.pending, []
        return left

    def records(self) -> list[dict[str, Any]]:
        return [asdict(r) for r in self.log]

    def _note(self, elapsed: float, kind: str, target: str, detail: str) -> None:
        self.log.append(FaultRecord(round(elapsed, 2), kind, target, detail))

    def _executing(self) -> list[tuple[Any, ...]]:
        try:
            return self.ledger.rows(EXECUTING)
        except Exception:  # the server is restarting: no answer now
            return []

    def _busy(self, spared: frozenset[int] = frozenset()) -> list[Worker]:
        pids = {pid for (pid,) in self._executing()}
        live = [w for w in self.fleet.live() if w.registered() and w.pid not in spared]
        busy = [w for w in live if w.pid in pids]
        return sorted(busy or live, key=lambda w: w.pid)

    def _later(self, fault: str, elapsed: float, reason: str = "") -> bool:
        """Put ``fault`` back half a second later, up to 20 times per ``reason``: what it
        waits for (a worker holding running jobs, a second live worker, a lock the busy
        workers let go) is usually there a moment later."""
        key = (fault, reason)
        tries = self.retries.get(key, 0)
        if tries >= 20:
            return False
        self.retries[key] = tries + 1
        self.pending.insert(0, Fault(round(elapsed + 0.5, 2), fault))
        self.pending.sort(key=lambda f: f.at)
        return True

    def _kill(self, elapsed: float) -> None:
        spared = frozenset(pid for pid, at in self.woken.items() if elapsed - at < WAKE_GRACE)
        candidates = self._busy(spared)
        # A kill while fewer than two workers are up would leave the fleet with none (a
        # replacement takes seconds to start on a loaded machine): wait for one to come up.
        if len(candidates) < 2 and self._later("kill", elapsed):
            return
        self.retries.pop(("kill", ""), None)
        if not candidates:
            self._note(elapsed, "kill", "-", "no live worker to kill")
            return
        victim = self.rng.choice(candidates)
        self.fleet.kill(victim)
        spare = self.fleet.spawn()
        self._note(elapsed, "kill", victim.name, f"SIGKILL pid {victim.pid}; {spare.name} started")

    def _zombie(self, elapsed: float) -> None:
        candidates = self._busy()
        busy = {pid for (pid,) in self._executing()}
        idle = not any(w.pid in busy for w in candidates)
        if self.zombie is None and idle and self._later("zombie", elapsed):
            return
        self.retries.pop(("zombie", ""), None)
        if self.zombie is not None or not candidates:
            self._note(elapsed, "zombie", "-", "skipped: a zombie is asleep or no live worker")
            return
        # A zombie proves something only if it froze holding leases: prefer a worker that is
        # running a job now (any worker when none is).
        victim = self.rng.choice([w for w in candidates if w.pid in busy] or candidates)
        self.fleet.stop(victim)
        if self.ledger.dialect == "sqlite" and not _write_lock_free(self.ledger.database):
            # Frozen inside a write transaction, it would hold SQLite's one write lock: no
            # peer could write, recovery included, so the zombie would prove nothing and stall
            # the whole run (a CI run lost 60 s and its lock fault that way). Let it go on and
            # freeze a worker a moment later instead.
            self.fleet.resume(victim)
            if self._later("zombie", elapsed, "lock"):
                return
            self._note(elapsed, "zombie", "-", "skipped: every worker froze holding the lock")
            return
        self.retries.pop(("zombie", "lock"), None)  # the next zombie gets its own 20 tries
        newest = self.ledger.value(NEWEST)
        spare = self.fleet.spawn()
        self.zombie = (victim, elapsed, newest)
        self._note(
            elapsed, "zombie", victim.name, f"SIGSTOP pid {victim.pid}; {spare.name} started"
        )

    def _maybe_wake(self, elapsed: float) -> None:
        assert self.zombie is not None
        victim, since, newest = self.zombie
        try:
            lost = self.ledger.value(LOST_BY, pid=victim.pid, after=newest)
        except Exception:
            lost = 0
        if lost:
            self._wake(elapsed, f"after recovery took {lost} of its leases")
        elif elapsed - since >= ZOMBIE_WAIT[self.ledger.dialect]:
            wait = ZOMBIE_WAIT[self.ledger.dialect]
            self._wake(elapsed, f"after {wait:g} s (no lease of it lapsed)")

    def _wake(self, elapsed: float, why: str) -> None:
        assert self.zombie is not None
        victim, since, _ = self.zombie
        self.zombie = None
        if victim.alive:
            self.fleet.resume(victim)
            self.woken[victim.pid] = elapsed
        self._note(elapsed, "wake", victim.name, f"SIGCONT {why}, {elapsed - since:.1f} s asleep")

    def _backends(self, elapsed: float) -> None:
        sessions = self.ledger.rows(
            "SELECT pid, application_name FROM pg_stat_activity "
            "WHERE application_name LIKE :prefix AND pid <> pg_backend_pid()",
            prefix=f"{self.fleet.run}-%",
        )
        if not sessions:
            self._note(elapsed, "backends", "-", "no session of this run's workers")
            return
        chosen = self.rng.sample(sorted(sessions), min(len(sessions), self.rng.randint(1, 3)))
        for pid, _ in chosen:
            self.ledger.rows("SELECT pg_terminate_backend(:pid)", pid=pid)
        names = ", ".join(sorted({str(name).rsplit("-", 1)[-1] for _, name in chosen}))
        self._note(elapsed, "backends", names, f"pg_terminate_backend on {len(chosen)} session(s)")

    def _restart(self, elapsed: float) -> None:
        started = clock.monotonic()
        done = subprocess.run(RESTART, capture_output=True, text=True, timeout=120)
        reconnect(self.ledger)
        took = clock.monotonic() - started
        detail = f"server restarted in {took:.1f} s (exit {done.returncode})"
        if done.returncode != 0:
            detail += f": {done.stderr.strip()[:200]}"
        self._note(elapsed, "restart", "postgresql", detail)

    def _lock(self, elapsed: float) -> None:
        if self.lock is not None:
            return
        # The hold runs in a thread of its own, so it lasts LOCK_SECONDS however long the
        # certifier's own loop is blocked (its producer waits on the same lock).
        taken = threading.Event()
        release = threading.Event()
        database = self.ledger.database

        refused: list[str] = []

        def hold() -> None:
            conn = sqlite3.connect(database, isolation_level=None, timeout=LOCK_WAIT)
            try:
                conn.execute("BEGIN IMMEDIATE")
                taken.set()
                release.wait(LOCK_SECONDS)  # the fault is exactly this long a hold
                conn.execute("ROLLBACK")
            except sqlite3.OperationalError as exc:
                # Another writer kept the lock past the timeout: no fault was injected, and
                # the record must say so rather than claim a hold that never happened.
                refused.append(str(exc))
            finally:
                taken.set()
                conn.close()

        thread = threading.Thread(target=hold, name="certify-lock", daemon=True)
        thread.start()
        taken.wait(LOCK_WAIT + 30)  # past the connection's timeout: taken or refused by then
        if refused:  # nothing to release later, so no unlock either
            thread.join(timeout=30)
            # SQLite's lock is not fair: busy workers can starve a waiter that polls (a CI run
            # waited 60 s in one go and missed). Try again a moment later, a few times.
            if self._later("lock", elapsed, "busy"):
                return
            self._note(elapsed, "lock-missed", "ledger file", f"not taken: {refused[0]}")
            return
        self.retries.pop(("lock", "busy"), None)
        self.lock = (thread, release)
        self._note(elapsed, "lock", "ledger file", f"BEGIN IMMEDIATE held for {LOCK_SECONDS:g} s")

    def _release(self, elapsed: float) -> None:
        assert self.lock is not None
        thread, release = self.lock
        self.lock = None
        release.set()
        thread.join(timeout=30)
        self._note(elapsed, "unlock", "ledger file", "write lock released")


def _write_lock_free(database: str) -> bool:
    """Whether a writer can take the SQLite file's write lock within a second (it is released
    at once). Other writers hold it for milliseconds; a frozen one holds it for good."""
    conn = sqlite3.connect(database, isolation_level=None, timeout=1.0)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()
