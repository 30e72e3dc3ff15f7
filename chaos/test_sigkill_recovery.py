"""Two worker processes on one SQLite file: SIGKILL the one running a job, the other finishes it.

Real processes and real time (short heartbeats), so it is marked ``chaos``; it still takes only
a couple of seconds.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from acta import Acta, EventCode, JobStatus, Reason
from chaos.process import spawn_worker, wait_for_line

pytestmark = pytest.mark.chaos

APP = textwrap.dedent(
    """
    import os
    from acta import Acta, JobContext

    app = Acta(os.environ["ACTA_DATABASE"])

    @app.job("chaos.slow-step", timeout="60s")
    def slow_step(ctx: JobContext) -> str:
        print(f"STARTED {ctx.execution} {os.getpid()}", flush=True)
        if ctx.execution == 1:
            ctx.cancellation.wait(60)  # the test kills this process while it waits
        print(f"FINISHED {ctx.execution} {os.getpid()}", flush=True)
        return f"finished by {os.getpid()}"
    """
)


def test_peer_process_recovers_a_killed_workers_job(tmp_path: Path) -> None:
    database = tmp_path / "ledger.sqlite3"
    (tmp_path / "chaos_app.py").write_text(APP)
    env = {"ACTA_DATABASE": str(database)}
    producer = Acta(database, apply_migrations=True)
    producer.define("chaos.slow-step")
    ref = producer.enqueue("chaos.slow-step")

    settings = {"heartbeat": 0.2, "poll": 0.05, "shutdown_grace": 2.0}
    workers = [spawn_worker(f"w{i}", tmp_path, "chaos_app:app", env, **settings) for i in (1, 2)]
    try:
        victim, _ = wait_for_line(workers, lambda c, line: line.startswith("STARTED 1 "), 30)
        victim.kill()
        survivor = next(w for w in workers if w is not victim)
        _, line = wait_for_line([survivor], lambda c, line: line.startswith("FINISHED 2 "), 30)
        assert line.split()[2] == str(survivor.pid)
        # A graceful stop lets the in-flight run settle first, so the ledger is final after it.
        assert survivor.terminate() == 0
    finally:
        for w in workers:
            if w.process.poll() is None:
                w.process.kill()
                w.process.wait()

    job = producer.get(ref)
    assert job.status is JobStatus.SUCCEEDED
    assert producer.result(ref) == f"finished by {survivor.pid}"
    events = producer.events(ref)
    codes = [e.code for e in events]
    assert codes.count(EventCode.EXECUTION_STARTED) == 2
    lost = [e for e in events if e.code is EventCode.LEASE_LOST]
    assert len(lost) == 1 and lost[0].execution == 1 and lost[0].reason is Reason.LEASE_EXPIRED
    started = [e for e in events if e.code is EventCode.EXECUTION_STARTED]
    assert started[0].worker != started[1].worker
    assert f":{victim.pid}:" in (started[0].worker or "")
    assert f":{survivor.pid}:" in (started[1].worker or "")
    producer.close()
