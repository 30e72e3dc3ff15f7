"""Worker processes for chaos tests: start them, read what they print, kill them.

Waiting here is bounded and event-driven (select on the children's output pipes), never a
fixed sleep, so a test takes as long as the behaviour it observes.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from acta.clock import SystemClock

_clock = SystemClock()


@dataclass
class Child:
    """One worker process and the lines it has printed so far."""

    name: str
    process: subprocess.Popen[bytes]
    lines: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    partial: str = ""
    closed: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: no cleanup, no last write, exactly like a crash."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self, timeout: float = 20) -> int:
        """SIGTERM, then wait for the graceful shutdown to finish."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)


def spawn_worker(
    name: str, app_dir: Path, app_ref: str, env: dict[str, str], **settings: float
) -> Child:
    """Start ``python -c`` running ``app.worker(**settings).run_forever()`` for ``module:attr``."""
    module, attr = app_ref.split(":")
    args = ", ".join(f"{k}={v!r}" for k, v in settings.items())
    code = (
        "import logging, sys; logging.basicConfig(stream=sys.stdout, level=logging.INFO); "
        f"from {module} import {attr} as app; app.worker({args}).run_forever()"
    )
    process = subprocess.Popen(
        [sys.executable, "-u", "-c", code],
        cwd=app_dir,
        env={**os.environ, **env, "PYTHONPATH": str(app_dir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    return Child(name, process)


def spawn_cli_worker(
    name: str, app_dir: Path, app_ref: str, env: dict[str, str], **settings: float
) -> Child:
    """Start ``acta worker --app module:attr`` (the command operators run) with ``settings``
    as its options (``shutdown_grace=2`` becomes ``--shutdown-grace 2s``)."""
    options: list[str] = []
    for key, value in settings.items():
        unit = "" if key == "executors" else "s"
        options += [f"--{key.replace('_', '-')}", f"{value:g}{unit}"]
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "acta.cli", "worker", "--app", app_ref, *options],
        cwd=app_dir,
        env={**os.environ, **env, "PYTHONPATH": str(app_dir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    return Child(name, process)


def _pull(child: Child) -> bool:
    """Read what the child's pipe holds now (one raw read, so no line waits in a buffer that
    select cannot see); False at end of file."""
    assert child.process.stdout is not None
    chunk = os.read(child.process.stdout.fileno(), 65536)
    if not chunk:
        return False
    child.partial += chunk.decode("utf-8", "replace")
    *complete, child.partial = child.partial.split("\n")
    child.lines.extend(complete)
    child.unread.extend(complete)
    return True


def wait_for_line(
    children: list[Child], match: Callable[[Child, str], bool], timeout: float
) -> tuple[Child, str]:
    """Read the children's output until a line satisfies ``match``; fail after ``timeout`` s.

    Lines read earlier but not yet matched are considered first, in order."""
    deadline = _clock.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for child in children:
            if child.process.stdout is not None and not child.closed:
                selector.register(child.process.stdout, selectors.EVENT_READ, child)
        while True:
            for child in children:
                while child.unread:
                    line = child.unread.pop(0)
                    if match(child, line):
                        return child, line
            left = deadline - _clock.monotonic()
            if left <= 0:
                output = "\n".join(f"[{c.name}] {line}" for c in children for line in c.lines[-20:])
                raise AssertionError(
                    f"no matching line within {timeout} s; recent output:\n{output}"
                )
            for key, _ in selector.select(timeout=left):
                child = key.data
                if not _pull(child):
                    child.closed = True
                    selector.unregister(key.fileobj)


def read_to_end(child: Child, timeout: float) -> list[str]:
    """Read the child's output until it closes its pipe (it exited); every line it printed.

    Fails after ``timeout`` s if the pipe is still open then."""
    deadline = _clock.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        if child.process.stdout is not None and not child.closed:
            selector.register(child.process.stdout, selectors.EVENT_READ, child)
        while not child.closed:
            left = deadline - _clock.monotonic()
            if left <= 0:
                raise AssertionError(f"{child.name} still writing after {timeout} s")
            for key, _ in selector.select(timeout=left):
                if not _pull(child):
                    child.closed = True
                    selector.unregister(key.fileobj)
    if child.partial:
        child.lines.append(child.partial)
        child.unread.append(child.partial)
        child.partial = ""
    return child.lines
