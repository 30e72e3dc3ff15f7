"""A graceful shutdown of a real worker logs no error for a cooperative handler it stops.

A sync handler that checks ``ctx.raise_if_cancelled()`` in a loop does what acta asks: when
the worker shuts down it raises ``JobCancelledError('shutdown')`` and its run is handed back.
Issue 8 item 11: the asyncio future that wraps the handler's thread is never retrieved, so
asyncio logs "Future exception was never retrieved ... JobCancelledError('shutdown')" at ERROR
in a real ``SIGTERM``-ed worker, an alarming line for a clean stop. The handler works in
0.1 s steps that do not watch the cancellation, so it is still running when the worker checks
for a live thread at shutdown and raises well within the cancel grace; a handler that raised
at the very instant of the cancellation would sometimes beat that check and hide the bug.
Real process, real time (heartbeat 0.2 s), so it is marked ``chaos``; it takes a second or two.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from acta import Acta, EventCode, JobStatus
from chaos.process import read_to_end, spawn_worker, wait_for_line

pytestmark = pytest.mark.chaos

APP = textwrap.dedent(
    """
    import os
    import threading
    from acta import Acta, JobContext

    app = Acta(os.environ["ACTA_DATABASE"])

    @app.job("chaos.cooperative", timeout="60s")
    def cooperative(ctx: JobContext) -> str:
        print(f"STARTED {ctx.execution}", flush=True)
        step = threading.Event()  # never set: each wait is one 0.1 s step of work
        while True:  # a long sync handler that checks in between its steps
            ctx.raise_if_cancelled()
            step.wait(0.1)
    """
)


def test_sigterm_stops_a_cooperative_handler_without_an_error_log(tmp_path: Path) -> None:
    database = str(tmp_path / "ledger.sqlite3")
    (tmp_path / "chaos_app.py").write_text(APP)
    producer = Acta(database, apply_migrations=True)
    producer.define("chaos.cooperative")
    ref = producer.enqueue("chaos.cooperative")

    worker = spawn_worker(
        "w1",
        tmp_path,
        "chaos_app:app",
        {"ACTA_DATABASE": database},
        heartbeat=0.2,
        poll=0.05,
        shutdown_grace=2.0,
    )
    try:
        wait_for_line([worker], lambda c, line: line.startswith("STARTED 1"), 30)
        assert worker.terminate() == 0
        lines = read_to_end(worker, 10)
    finally:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait()

    # The stop itself went as documented: the run was handed back, nothing spent.
    job = producer.get(ref)
    assert job.status is JobStatus.READY and job.attempts == 0
    assert EventCode.HANDED_BACK in [e.code for e in producer.events(ref)]
    producer.close()
    # And nothing in the worker's log (stdout and stderr, INFO and up) reports an error.
    unretrieved = [line for line in lines if "never retrieved" in line]
    assert unretrieved == [], "\n".join(lines)
    assert not [line for line in lines if line.startswith("ERROR")], "\n".join(lines)
