"""The certification's worker processes: start lab-app workers, read what they print, signal
them.

Each worker is ``python -m anvil.certify.labapp`` with the run's environment. On PostgreSQL
its DSN carries ``application_name=<run>-<worker>``, so the fault injector can terminate the
backends of this run's workers and no one else's. Reading is select() on the children's
pipes with a timeout: the certifier's loop waits on its children, never on a blind sleep.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

from acta.clock import SystemClock

ROOT = Path(__file__).resolve().parents[2]
clock = SystemClock()


@dataclass
class Worker:
    """One lab-app process and what it printed."""

    name: str
    process: subprocess.Popen[bytes]
    lines: list[str] = field(default_factory=list)
    partial: str = ""
    closed: bool = False
    stopped: bool = False  # SIGSTOPped and not yet resumed
    noted: bool = False  # its own exit (not a kill) was logged

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def registered(self) -> bool:
        return any("registered in namespace" in line for line in self.lines)


def with_application_name(dsn: str, name: str) -> str:
    """``dsn`` naming its sessions ``name`` (URL or key=value form)."""
    if "://" not in dsn:
        return f"{dsn} application_name={name}"
    parts = urlsplit(dsn)
    query = "&".join(p for p in [parts.query, urlencode({"application_name": name})] if p)
    return urlunsplit(parts._replace(query=query))


class Fleet:
    """The run's workers: start, kill, stop, resume, and drain their output."""

    def __init__(self, run: str, env: dict[str, str], database: str, dialect: str) -> None:
        self.run = run
        self.env = env
        self.database = database
        self.dialect = dialect
        self.workers: list[Worker] = []

    def spawn(self) -> Worker:
        name = f"w{len(self.workers) + 1}"
        database = self.database
        if self.dialect == "postgres":
            database = with_application_name(database, f"{self.run}-{name}")
        env = {
            **os.environ,
            **self.env,
            "ACTA_DATABASE": database,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        process = subprocess.Popen(
            [sys.executable, "-u", "-m", "anvil.certify.labapp"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        worker = Worker(name, process)
        self.workers.append(worker)
        return worker

    def live(self) -> list[Worker]:
        return [w for w in self.workers if w.alive and not w.stopped]

    def by_pid(self, pid: int) -> Worker | None:
        return next((w for w in self.workers if w.pid == pid), None)

    def kill(self, worker: Worker) -> None:
        """SIGKILL: no cleanup, no last write, exactly like a crash."""
        worker.process.send_signal(signal.SIGKILL)
        worker.process.wait(timeout=10)

    def stop(self, worker: Worker) -> None:
        """SIGSTOP: the process freezes mid-whatever, holding its leases, until resumed."""
        worker.process.send_signal(signal.SIGSTOP)
        # The signal is delivered asynchronously: wait for the kernel to report the child
        # stopped, so what the caller checks next (is SQLite's write lock free?) cannot change
        # under it: otherwise the worker could take the lock between the check and its stop.
        _, status = os.waitpid(worker.pid, os.WUNTRACED)
        if not os.WIFSTOPPED(status):  # it died on its own first: the status is its exit
            worker.process.returncode = os.waitstatus_to_exitcode(status)
        worker.stopped = True

    def resume(self, worker: Worker) -> None:
        worker.process.send_signal(signal.SIGCONT)
        worker.stopped = False

    def pump(self, seconds: float) -> None:
        """Read what the workers print for ``seconds`` (their pipes must never fill up)."""
        until = clock.monotonic() + seconds
        with selectors.DefaultSelector() as selector:
            for worker in self.workers:
                if worker.process.stdout is not None and not worker.closed:
                    selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
            while True:
                left = until - clock.monotonic()
                if left <= 0:
                    return
                for key, _ in selector.select(timeout=left):
                    self._read(key.data, selector, key.fileobj)

    def _read(self, worker: Worker, selector: selectors.BaseSelector, fileobj: object) -> None:
        assert worker.process.stdout is not None
        chunk = os.read(worker.process.stdout.fileno(), 65536)
        if not chunk:
            worker.closed = True
            selector.unregister(fileobj)  # type: ignore[arg-type]
            return
        worker.partial += chunk.decode("utf-8", "replace")
        *complete, worker.partial = worker.partial.split("\n")
        worker.lines.extend(complete)
        del worker.lines[:-200]  # keep the tail only: a long run prints a lot

    def tail(self, lines: int = 8) -> str:
        return "\n".join(
            f"[{w.name} {w.pid}] {line}" for w in self.workers for line in w.lines[-lines:]
        )

    def shutdown(self, deadline: float) -> list[str]:
        """Resume stopped workers, SIGTERM the live ones (once registered, so their handlers
        are in place) and wait for them; kill whatever is left at ``deadline``. What went
        wrong, as lines (an empty list: every worker stopped cleanly)."""
        problems: list[str] = []
        for worker in self.workers:
            if worker.stopped and worker.alive:
                self.resume(worker)
        live = [w for w in self.workers if w.alive]
        while any(not w.registered() for w in live if w.alive) and clock.monotonic() < deadline:
            self.pump(0.1)
        for worker in live:
            if worker.alive:
                worker.process.send_signal(signal.SIGTERM)
        while any(w.alive for w in live) and clock.monotonic() < deadline:
            self.pump(0.1)
        for worker in live:
            if worker.alive:
                problems.append(f"{worker.name} (pid {worker.pid}) ignored SIGTERM; killed")
                worker.process.kill()
                worker.process.wait(timeout=10)
            elif worker.process.returncode not in (0, None):
                problems.append(f"{worker.name} exited {worker.process.returncode} on SIGTERM")
        return problems

    def reap(self) -> None:
        for worker in self.workers:
            if worker.alive:
                if worker.stopped:
                    self.resume(worker)
                worker.process.kill()
                worker.process.wait(timeout=10)
