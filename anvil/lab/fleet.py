"""The lab's worker processes: real children running ``python -m anvil.lab.app``.

A worker is added with ``add`` (it counts as up once the ledger has its ``workers`` row, so
"up" means registered, not merely forked), killed with ``kill`` (SIGKILL: no cleanup, no last
write, like a power cut of that process) and stopped with ``stop`` (SIGTERM: the worker finishes
or hands back what it holds and writes ``worker-stopped``). Each child's output goes to its own
log file in the lab's work directory, so a chatty worker can never block on a full pipe.
Children get SIGTERM when the lab process dies (Linux), so an interrupted lab leaves none behind.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from acta.clock import SystemClock
from anvil.workload import REPO, _die_with_parent

clock = SystemClock()
START_TIMEOUT = 60.0


class FleetError(RuntimeError):
    """A worker process could not be started or controlled."""


@dataclass
class Worker:
    """One worker process of the lab."""

    number: int
    process: subprocess.Popen[bytes]
    log: Path
    _out: IO[bytes]
    killed: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Fleet:
    """The worker processes of one lab; thread-safe."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self._env = env
        self._logs = logs
        self._lock = threading.Lock()
        self._workers: list[Worker] = []
        self._count = 0
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lab-fleet")
        self.kills = 0  # SIGKILLs sent by the lab (the ledger's own count is worker-died)

    def live(self) -> list[Worker]:
        with self._lock:
            return [w for w in self._workers if w.alive()]

    def all(self) -> list[Worker]:
        with self._lock:
            return list(self._workers)

    def spawn(self) -> Worker:
        """Start one worker process (not waiting for it to register)."""
        pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
        with self._lock:
            self._count += 1
            number = self._count
            log = self._logs / f"worker-{number}.log"
            out = log.open("wb")
            # Started from the fleet's own long-lived thread: the kernel's parent-death signal
            # follows the thread that forked, and a page request's thread ends with the request.
            process = self._spawner.submit(
                subprocess.Popen,
                [sys.executable, "-u", "-m", "anvil.lab.app"],
                cwd=REPO,
                env={**os.environ, **self._env, "PYTHONPATH": pythonpath},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            ).result()
            worker = Worker(number, process, log, out)
            self._workers.append(worker)
        return worker

    def add(self, registered: Callable[[int], bool], timeout: float = START_TIMEOUT) -> Worker:
        """Start a worker and wait until ``registered(pid)`` says the ledger has it."""
        worker = self.spawn()
        self.wait_registered([worker], registered, timeout)
        return worker

    def wait_registered(
        self, workers: list[Worker], registered: Callable[[int], bool], timeout: float
    ) -> None:
        deadline = clock.monotonic() + timeout
        waiting = list(workers)
        while waiting:
            for w in list(waiting):
                if not w.alive():
                    raise FleetError(f"worker {w.number} exited while starting:\n{w.tail()}")
                if registered(w.pid):
                    waiting.remove(w)
            if waiting:
                if clock.monotonic() > deadline:
                    raise FleetError(f"worker {waiting[0].number} did not register in {timeout} s")
                # Waiting on the child (not sleeping): returns early if it exits.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    waiting[0].process.wait(timeout=0.1)

    def kill(self, pid: int | None = None, rng: random.Random | None = None) -> Worker | None:
        """SIGKILL the worker with ``pid``, or a random live one; None if there is none."""
        with self._lock:
            live = [w for w in self._workers if w.alive()]
            if pid is not None:
                live = [w for w in live if w.pid == pid]
            if not live:
                return None
            victim = (rng or random).choice(live)
            victim.process.send_signal(signal.SIGKILL)
            victim.killed = True
            self.kills += 1
        victim.process.wait(timeout=10)
        victim._out.close()
        return victim

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM every live worker and wait for their graceful shutdown (SIGKILL after
        ``timeout`` for one that does not finish)."""
        with self._lock:
            workers = list(self._workers)
        for w in workers:
            if w.alive():
                w.process.send_signal(signal.SIGTERM)
        deadline = clock.monotonic() + timeout
        for w in workers:
            try:
                w.process.wait(timeout=max(deadline - clock.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                w.process.kill()
                w.process.wait()
            w._out.close()
