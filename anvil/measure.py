"""What one benchmark run measures, and how runs are repeated and summarised.

Each measurement is one warm-up run (discarded) and then a few measured runs, each on a fresh
ledger; the summary gives the median, minimum and maximum of every metric across the measured
runs. Timing reads ``SystemClock.monotonic()``; the drain reads its window from the ledger.

* ``enqueue_single``: sequential ``app.enqueue`` calls, each its own transaction.
* ``enqueue_batch``: ``app.enqueue_batch`` calls of ``per_call`` jobs (requests built inside
  the timed loop, since building them is part of what a producer pays).
* ``drain``: idle, registered worker processes; a backlog committed in one transaction; the
  rate is jobs / (last settle - first execution-started), both read from the ledger, so
  process start-up and the preload are outside the window.
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acta
from acta.model.codes import EventCode, JobStatus
from anvil.bench_app import DEFAULT_PROFILE, NOOP
from anvil.workload import BenchError, Target, clock, fresh_ledger, instant, wait_for, workers

Run = dict[str, float]
# Idle drain workers look for work this often, so that every process starts on the backlog
# within a few milliseconds of its commit. It does not pace the drain itself: a worker with a
# full batch claims again at once and every finished run wakes the claim loop.
DRAIN_POLL = 0.02


@dataclass
class Measurement:
    """The runs of one benchmark with one set of parameters."""

    name: str
    provider: str
    params: dict[str, Any]
    unit: str
    headline: str
    warmups: list[Run] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    load_before: list[float] = field(default_factory=list)
    load_after: list[float] = field(default_factory=list)
    # Test runs of other people seen on the machine at the start or the end (pids and names).
    others: list[str] = field(default_factory=list)
    # Share of the CPU time taken by the hypervisor from this VM meanwhile (a noisy host).
    steal: float = 0.0
    # Mean latency of the machine's disk writes and cache flushes (fsync) meanwhile, in ms:
    # commits wait for flushes, and this VM's disk is shared with others.
    disk: dict[str, float] = field(default_factory=dict)
    _cpu: list[int] = field(default_factory=list)
    _disk: list[int] = field(default_factory=list)

    def begin(self) -> None:
        self.load_before = loadavg()
        self.others = other_tests()
        self._cpu = cpu_times()
        self._disk = disk_counters()

    def end(self) -> None:
        self.load_after = loadavg()
        self.others = sorted(set(self.others) | set(other_tests()))
        now = cpu_times()
        if len(self._cpu) > 7 and len(now) == len(self._cpu):
            spent = [b - a for a, b in zip(self._cpu, now, strict=True)]
            self.steal = round(spent[7] / max(sum(spent), 1), 4)
        disk = disk_counters()
        if self._disk and len(disk) == len(self._disk):
            writes, write_ms, flushes, flush_ms = (
                b - a for a, b in zip(self._disk, disk, strict=True)
            )
            self.disk = {
                "write_ms": round(write_ms / writes, 3) if writes else 0.0,
                "flush_ms": round(flush_ms / flushes, 3) if flushes else 0.0,
                "flushes": flushes,
            }

    def summary(self) -> dict[str, dict[str, float]]:
        """Median, minimum and maximum of each metric over the measured runs."""
        keys = [k for k in self.runs[0] if all(k in r for r in self.runs)] if self.runs else []
        return {
            key: {
                "median": statistics.median(r[key] for r in self.runs),
                "min": min(r[key] for r in self.runs),
                "max": max(r[key] for r in self.runs),
            }
            for key in keys
        }

    def median(self, key: str | None = None) -> float:
        return self.summary()[key or self.headline]["median"]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "provider": self.provider,
            "params": self.params,
            "unit": self.unit,
            "headline": self.headline,
            "summary": self.summary(),
            "runs": self.runs,
            "warmups": self.warmups,
            "load_before": self.load_before,
            "load_after": self.load_after,
            "others": self.others,
            "steal": self.steal,
            "disk": self.disk,
        }


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages (other work on the machine shows up here)."""
    return [round(x, 2) for x in os.getloadavg()]


def cpu_times() -> list[int]:
    """The machine's CPU time counters (user, nice, system, idle, iowait, irq, softirq,
    steal, ...) from /proc/stat, in ticks."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0]
    except OSError:
        return []
    return [int(x) for x in first.split()[1:]]


def disk_counters() -> list[int]:
    """Writes, ms writing, flushes and ms flushing, summed over whole disks (/proc/diskstats);
    empty where the kernel does not count flushes."""
    totals = [0, 0, 0, 0]
    try:
        lines = Path("/proc/diskstats").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        parts = line.split()
        if len(parts) < 20 or not parts[2].startswith(("vd", "sd", "nvme", "xvd")):
            continue
        if parts[2][-1].isdigit() and not parts[2].startswith("nvme"):
            continue  # a partition: its disk is counted already
        if parts[2].startswith("nvme") and "p" in parts[2][4:]:
            continue
        fields = [int(x) for x in parts[3:]]
        for i, value in enumerate((fields[4], fields[7], fields[15], fields[16])):
            totals[i] += value
    return totals


def other_tests() -> list[str]:
    """Test runners (pytest, nox) running on this machine that are not ours: their load
    disturbs a measurement."""
    mine = {os.getpid(), os.getppid()}
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in mine:
            continue
        try:
            words = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        command = " ".join(w.decode(errors="replace") for w in words if w)
        if "pytest" in command or ("nox" in command and "bench" not in command):
            found.append(f"{proc.name} {command[:80]}")
    return found


def acta_fingerprint() -> str:
    """A digest of acta's source: if it changes during a run, the run measured two codes."""
    digest = hashlib.sha256()
    root = Path(acta.__file__).parent
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".sql"):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def repeat(m: Measurement, run: Callable[[], Run], warmups: int, runs: int) -> Measurement:
    """Fill ``m`` with ``warmups`` discarded runs and ``runs`` measured ones."""
    m.begin()
    for _ in range(warmups):
        m.warmups.append(run())
    for _ in range(runs):
        m.runs.append(run())
    m.end()
    return m


def enqueue_single(target: Target, count: int) -> Run:
    """``count`` sequential single enqueues, each committed on its own."""
    with fresh_ledger(target) as ledger:
        app = ledger.app()
        try:
            app.enqueue(NOOP, -1)  # opens the pool and caches the definition ids: not timed
            start = clock.monotonic()
            for i in range(count):
                app.enqueue(NOOP, i)
            seconds = clock.monotonic() - start
        finally:
            app.close()
    return {
        "jobs_per_s": count / seconds,
        "us_per_job": seconds / count * 1e6,
        "seconds": seconds,
        "jobs": count,
    }


def enqueue_batch(target: Target, total: int, per_call: int) -> Run:
    """``total`` jobs in ``enqueue_batch`` calls of ``per_call`` (one transaction each)."""
    with fresh_ledger(target) as ledger:
        app = ledger.app()
        try:
            app.enqueue(NOOP, -1)
            start = clock.monotonic()
            for first in range(0, total, per_call):
                last = min(first + per_call, total)
                app.enqueue_batch([app.request(NOOP, i) for i in range(first, last)])
            seconds = clock.monotonic() - start
        finally:
            app.close()
    return {
        "jobs_per_s": total / seconds,
        "ms_per_call": seconds / -(-total // per_call) * 1e3,
        "seconds": seconds,
        "jobs": total,
    }


def drain(
    target: Target, jobs: int, processes: int, executors: int, profile: str = DEFAULT_PROFILE
) -> Run:
    """Drain a backlog of ``jobs`` zero-work jobs with ``processes`` x ``executors``."""
    with (
        fresh_ledger(target) as ledger,
        workers(
            ledger, processes, executors=executors, listen=True, poll=DRAIN_POLL, profile=profile
        ) as children,
    ):
        app = ledger.app()
        try:
            backlog = [app.request(NOOP, i) for i in range(jobs)]
            committed = clock.monotonic()
            app.enqueue_batch(backlog)  # one transaction: every worker sees all of it at once
        finally:
            app.close()
        remaining = (
            "SELECT count(*) FROM {runtime} r JOIN {definitions} d ON d.id = r.definition_id "
            f"WHERE d.name = '{NOOP}' AND r.status < {int(JobStatus.SUCCEEDED)}"
        )
        wait_for(children, lambda: ledger.sql(remaining)[0][0] == 0, 120 + jobs / 50, "draining")
        wall = clock.monotonic() - committed
        [(first_start,)] = ledger.sql(
            "SELECT min(e.at) FROM {events} e JOIN {runtime} r ON r.job_id = e.job_id "
            "JOIN {definitions} d ON d.id = r.definition_id "
            f"WHERE e.code = {int(EventCode.EXECUTION_STARTED)} AND d.name = '{NOOP}'"
        )
        [(last_settle, done)] = ledger.sql(
            "SELECT max(r.updated_at), count(*) FROM {runtime} r "
            "JOIN {definitions} d ON d.id = r.definition_id "
            f"WHERE d.name = '{NOOP}' AND r.status = {int(JobStatus.SUCCEEDED)}"
        )
    if done != jobs:
        raise BenchError(f"drain finished {done} jobs, expected {jobs}")
    window = (instant(last_settle) - instant(first_start)).total_seconds()
    return {
        "jobs_per_s": done / window,
        "us_per_job": window / done * 1e6,
        "window_s": window,
        "wall_s": wall,
        "jobs": done,
    }
