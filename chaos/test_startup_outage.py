"""A worker that starts while PostgreSQL is away waits for it instead of crashing (issue 8).

The worker's ledger is behind a ``FaultProxy`` that refuses every connection at first. The
worker must log that it cannot register and try again. Then the proxy accepts again, but the
reply to the start-up schema check (the query on ``to_regclass``) is lost on the way back: the
connection drops in the middle of the check. That used to escape as a raw psycopg error and end
the process; it is an outage like any other, so the worker tries again, registers, and runs the
job it finds. Real process and real time (about two seconds): ``chaos``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from acta import Acta, JobStatus
from acta_testing.faultproxy import postgres_proxy
from chaos.process import Child, read_to_end, spawn_cli_worker, spawn_worker, wait_for_line

pytestmark = pytest.mark.chaos

APP = textwrap.dedent(
    """
    import os
    from acta import Acta

    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"])

    @app.job("chaos.after-outage", input=int)
    def after_outage(n: int) -> int:
        print(f"RAN {n}", flush=True)
        return n * 2
    """
)


@pytest.mark.parametrize("how", ["python", "cli"])
def test_worker_started_during_an_outage_registers_once_the_database_is_back(
    tmp_path: Path, pg_ledger: tuple[str, str], how: str
) -> None:
    """Both ways of starting a worker: ``app.worker().run_forever()`` and ``acta worker``
    (which first checks the schema, and must not give up on a database that is away)."""
    dsn, schema = pg_ledger
    (tmp_path / "chaos_app.py").write_text(APP)
    producer = Acta(dsn, schema=schema)
    producer.define("chaos.after-outage", input=int)
    ref = producer.enqueue("chaos.after-outage", 21)
    with postgres_proxy(dsn) as proxy:
        proxy.refuse()
        env = {"ACTA_DATABASE": proxy.dsn(dsn), "ACTA_SCHEMA": schema}
        spawn = spawn_worker if how == "python" else spawn_cli_worker
        worker: Child = spawn(
            "w1", tmp_path, "chaos_app:app", env, heartbeat=0.3, poll=0.05, shutdown_grace=2.0
        )
        try:
            wait_for_line([worker], lambda c, line: "cannot register" in line, 20)
            assert proxy.counts["refused"] >= 1
            # Back, but the first schema check loses its connection half way.
            proxy.drop_reply_to(b"to_regclass")
            proxy.accept()
            wait_for_line([worker], lambda c, line: "registered in namespace" in line, 20)
            assert proxy.armed == 0  # the check's reply was in fact dropped
            wait_for_line([worker], lambda c, line: line == "RAN 21", 20)
            assert worker.terminate() == 0
            lines = read_to_end(worker, 10)
        finally:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait()

    output = "\n".join(lines)
    assert "Traceback" not in output, output
    job = producer.get(ref)
    assert job.status is JobStatus.SUCCEEDED, output
    assert producer.result(ref) == 42
    producer.close()


def test_sigterm_before_the_database_ever_answered_exits_cleanly(
    tmp_path: Path, pg_ledger: tuple[str, str]
) -> None:
    dsn, schema = pg_ledger
    (tmp_path / "chaos_app.py").write_text(APP)
    with postgres_proxy(dsn) as proxy:
        proxy.refuse()
        env = {"ACTA_DATABASE": proxy.dsn(dsn), "ACTA_SCHEMA": schema}
        worker: Child = spawn_worker(
            "w1", tmp_path, "chaos_app:app", env, heartbeat=0.3, poll=0.05, shutdown_grace=2.0
        )
        try:
            wait_for_line([worker], lambda c, line: "cannot register" in line, 20)
            # Closing must not open the ledger it never reached (that would fail again).
            assert worker.terminate(timeout=5) == 0
            lines = read_to_end(worker, 5)
        finally:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait()
    output = "\n".join(lines)
    assert "Traceback" not in output, output
    assert any("stopped before it could register" in line for line in lines), output
