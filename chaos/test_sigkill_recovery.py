"""Real worker processes on one ledger: SIGKILL the one running a job, a peer finishes it.

On SQLite two processes share one file; on PostgreSQL three processes share one schema. Real
processes and real time (short heartbeats), so it is marked ``chaos``; each case still takes
only a couple of seconds.
"""

from __future__ import annotations

import os
import secrets
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from acta import Acta, EventCode, JobStatus, Reason
from chaos.process import spawn_worker, wait_for_line

pytestmark = pytest.mark.chaos

APP = textwrap.dedent(
    """
    import os
    from acta import Acta, JobContext

    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"])

    @app.job("chaos.slow-step", timeout="60s")
    def slow_step(ctx: JobContext) -> str:
        print(f"STARTED {ctx.execution} {os.getpid()}", flush=True)
        if ctx.execution == 1:
            ctx.cancellation.wait(60)  # the test kills this process while it waits
        print(f"FINISHED {ctx.execution} {os.getpid()}", flush=True)
        return f"finished by {os.getpid()}"
    """
)

PG_DSN = os.environ.get("ACTA_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, int]]:
    """(database, schema, worker processes) for one provider."""
    if request.param == "sqlite":
        yield str(tmp_path / "ledger.sqlite3"), "acta", 2
        return
    from acta_testing.schemas import postgres_unavailable

    reason = postgres_unavailable(PG_DSN)
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required under CI: {reason}")
        pytest.skip(f"PostgreSQL was not run: {reason}")
    import psycopg
    from psycopg import sql

    schema = f"acta_t_chaos_{secrets.token_hex(4)}"
    yield PG_DSN, schema, 3
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def test_peer_process_recovers_a_killed_workers_job(
    tmp_path: Path, ledger: tuple[str, str, int]
) -> None:
    database, schema, processes = ledger
    (tmp_path / "chaos_app.py").write_text(APP)
    env = {"ACTA_DATABASE": database, "ACTA_SCHEMA": schema}
    producer = Acta(database, schema=schema, apply_migrations=True)
    producer.define("chaos.slow-step")
    ref = producer.enqueue("chaos.slow-step")

    settings = {"heartbeat": 0.2, "poll": 0.05, "shutdown_grace": 2.0}
    workers = [
        spawn_worker(f"w{i}", tmp_path, "chaos_app:app", env, **settings)
        for i in range(1, processes + 1)
    ]
    try:
        victim, _ = wait_for_line(workers, lambda c, line: line.startswith("STARTED 1 "), 30)
        victim.kill()
        survivors = [w for w in workers if w is not victim]
        finisher, line = wait_for_line(
            survivors, lambda c, line: line.startswith("FINISHED 2 "), 30
        )
        assert line.split()[2] == str(finisher.pid)
        # A graceful stop lets the in-flight run settle first, so the ledger is final after it.
        for survivor in survivors:
            assert survivor.terminate() == 0
    finally:
        for w in workers:
            if w.process.poll() is None:
                w.process.kill()
                w.process.wait()

    job = producer.get(ref)
    assert job.status is JobStatus.SUCCEEDED
    assert producer.result(ref) == f"finished by {finisher.pid}"
    events = producer.events(ref)
    codes = [e.code for e in events]
    assert codes.count(EventCode.EXECUTION_STARTED) == 2
    assert codes.count(EventCode.SUCCEEDED) == 1
    lost = [e for e in events if e.code is EventCode.LEASE_LOST]
    assert len(lost) == 1 and lost[0].execution == 1 and lost[0].reason is Reason.LEASE_EXPIRED
    assert f":{victim.pid}:" in (lost[0].worker or "")  # recorded against the dead worker
    started = [e for e in events if e.code is EventCode.EXECUTION_STARTED]
    assert f":{victim.pid}:" in (started[0].worker or "")
    assert f":{finisher.pid}:" in (started[1].worker or "")
    producer.close()
