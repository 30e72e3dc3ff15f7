"""acta.asgi under a real uvicorn: SIGTERM hands a running job back within the grace, and two
uvicorn worker processes are two acta peers that recover each other's jobs.

Real processes and real time; each wait is bounded and reads the ledger (no fixed sleeps).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, JobStatus
from acta.model.codes import EventCode, Reason, WorkerStatus

pytestmark = pytest.mark.chaos

GRACE = 1.0
APP = """\
import asyncio
import os
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from acta import Acta
from acta.asgi import lifespan

jobs = Acta(os.environ["LEDGER"])


@jobs.job("hold")
async def hold(_: None) -> int:
    release = Path(os.environ["RELEASE"])
    while not release.exists():
        await asyncio.sleep(0.02)
    return os.getpid()


app = Starlette(
    lifespan=lifespan(
        jobs, executors=2, profile="direct", shutdown_grace={grace}, heartbeat=0.2, poll=0.05
    )
)
"""


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Acta, Callable[..., subprocess.Popen[bytes]]]]:
    (tmp_path / "webapp.py").write_text(textwrap.dedent(APP.format(grace=GRACE)))
    ledger = tmp_path / "ledger.sqlite3"
    jobs = Acta(ledger, apply_migrations=True)
    jobs.migrate()

    @jobs.job("hold")  # the producer's side: only the uvicorn processes run it
    async def hold(_: None) -> int:
        raise AssertionError("runs in uvicorn only")

    started: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []
    env = {**os.environ, "LEDGER": str(ledger), "RELEASE": str(tmp_path / "release")}
    env.pop("ACTA_WORKER", None)

    def serve(*extra: str) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "uvicorn", "webapp:app", "--port", "0", *extra]
        # Its log goes to a file: a pipe nobody reads could fill and stall the server.
        log = (tmp_path / f"uvicorn-{len(started)}.log").open("wb")
        logs.append(log)
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stderr=log, stdout=log)
        proc.log = log.name  # type: ignore[attr-defined]
        started.append(proc)
        return proc

    yield jobs, serve
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    for log in logs:
        log.close()
    jobs.close()


def test_sigterm_hands_the_running_job_back_within_the_grace(site) -> None:  # type: ignore[no-untyped-def]
    jobs, serve = site
    proc = serve()
    ref = jobs.enqueue("hold")
    _until(lambda: jobs.get(ref).status is JobStatus.EXECUTING, proc)
    asked = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=GRACE + 10)
    took = time.monotonic() - asked
    assert took <= GRACE + 1.0, f"uvicorn took {took:.2f} s to exit"
    # uvicorn re-raises the signal it caught once it has shut down (0 on older releases).
    assert proc.returncode in (0, -signal.SIGTERM), _log(proc)
    job = jobs.get(ref)
    assert job.status is JobStatus.READY
    assert [(e.code, e.reason) for e in jobs.events(ref)][-1] == (
        EventCode.HANDED_BACK,
        Reason.SHUTDOWN,
    )
    (worker,) = jobs.workers()
    assert worker.status is WorkerStatus.STOPPED and worker.pid == proc.pid


def test_two_uvicorn_workers_are_two_peers_and_one_recovers_the_others_jobs(  # type: ignore[no-untyped-def]
    site, tmp_path: Path
) -> None:
    jobs, serve = site
    proc = serve("--workers", "2")
    refs = [jobs.enqueue("hold") for _ in range(4)]
    # Each process runs two at once: four running means each peer holds two.
    _until(lambda: sum(jobs.get(r).status is JobStatus.EXECUTING for r in refs) == 4, proc)
    peers = [w for w in jobs.workers() if w.status is WorkerStatus.ACTIVE]
    assert len(peers) == 2 and len({w.pid for w in peers}) == 2
    victim, survivor = peers
    os.kill(victim.pid, signal.SIGKILL)
    (tmp_path / "release").touch()
    _until(lambda: all(jobs.get(r).status is JobStatus.SUCCEEDED for r in refs), proc, 60)
    assert sorted(jobs.result(r) for r in refs) == [survivor.pid] * 4
    assert sorted(jobs.get(r).executions for r in refs) == [1, 1, 2, 2]
    # Its leases expire after four heartbeats; it is declared dead after seven.
    _until(lambda: _status(jobs, victim.worker_id) is WorkerStatus.DEAD, proc)
    assert _status(jobs, survivor.worker_id) is WorkerStatus.ACTIVE


def _status(jobs: Acta, worker_id: int) -> WorkerStatus:
    (row,) = [w for w in jobs.workers() if w.worker_id == worker_id]
    return row.status


def _until(
    condition: Callable[[], bool], proc: subprocess.Popen[bytes], timeout: float = 20
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"uvicorn exited: {_log(proc)}")
        assert time.monotonic() < deadline, f"not reached in time; uvicorn said: {_log(proc)}"
        time.sleep(0.02)


def _log(proc: subprocess.Popen[bytes]) -> str:
    return Path(proc.log).read_text(errors="replace")  # type: ignore[attr-defined]
