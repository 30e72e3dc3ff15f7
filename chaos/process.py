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
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

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
        text=True,
    )
    return Child(name, process)


def wait_for_line(
    children: list[Child], match: Callable[[Child, str], bool], timeout: float
) -> tuple[Child, str]:
    """Read the children's output until a line satisfies ``match``; fail after ``timeout`` s."""
    deadline = _clock.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for child in children:
            if child.process.stdout is not None and child.process.poll() is None:
                selector.register(child.process.stdout, selectors.EVENT_READ, child)
        while True:
            left = deadline - _clock.monotonic()
            if left <= 0:
                output = "\n".join(f"[{c.name}] {line}" for c in children for line in c.lines[-20:])
                raise AssertionError(
                    f"no matching line within {timeout} s; recent output:\n{output}"
                )
            for key, _ in selector.select(timeout=left):
                child: Child = key.data
                line = key.fileobj.readline()  # type: ignore[union-attr]
                if not line:
                    selector.unregister(key.fileobj)
                    continue
                child.lines.append(line.rstrip("\n"))
                if match(child, line):
                    return child, line
