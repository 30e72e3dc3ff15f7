"""SIGTERM while PostgreSQL is away: the worker still stops within its grace (issue 8).

A real ``acta worker`` process reaches its ledger through a ``FaultProxy``. It holds three long
cooperative sync jobs when the proxy resets every connection and refuses new ones (the real
server keeps running: other tests use it), and then it gets SIGTERM. Nothing it would write on
the way out (hand-backs, its stop, heartbeats) can land, so the shutdown must give up on them
in bounded time: the process exits 0 within the grace plus one second, says in a log line that
it stopped and left its work for recovery, and prints no traceback. Once the proxy accepts
again a peer's recovery takes the three jobs back (one lease-lost event each) and runs them,
so they were left for recovery and not lost.

Real processes and real time (heartbeat 0.3 s, grace 2 s): ``chaos``. About ten seconds.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from acta import Acta, EventCode, JobStatus
from acta.clock import SystemClock
from acta_testing.faultproxy import FaultProxy, postgres_proxy
from chaos.process import Child, read_to_end, spawn_cli_worker, spawn_worker, wait_for_line

pytestmark = pytest.mark.chaos

HEARTBEAT = 0.3
GRACE = 2.0
JOBS = 3

APP = textwrap.dedent(
    """
    import os
    from acta import Acta, JobContext

    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"])

    @app.job("chaos.outage-step", input=int, timeout="60s")
    def outage_step(n: int, ctx: JobContext) -> int:
        # One write per line: the runs' threads print at the same moment.
        os.write(1, f"STARTED {n} {ctx.execution} {os.getpid()}\\n".encode())
        ctx.cancellation.wait(float(os.environ["JOB_SECONDS"]))
        return n
    """
)

_clock = SystemClock()


def _database_down(proxy: FaultProxy) -> None:
    proxy.refuse()
    proxy.reset_all()


def test_sigterm_with_the_database_away_exits_in_time_and_leaves_jobs_for_recovery(
    tmp_path: Path, pg_ledger: tuple[str, str]
) -> None:
    dsn, schema = pg_ledger
    (tmp_path / "chaos_app.py").write_text(APP)
    producer = Acta(dsn, schema=schema)
    producer.define("chaos.outage-step", input=int)
    refs = [producer.enqueue("chaos.outage-step", n) for n in range(JOBS)]
    children: list[Child] = []
    with postgres_proxy(dsn) as proxy:
        env = {"ACTA_DATABASE": proxy.dsn(dsn), "ACTA_SCHEMA": schema, "JOB_SECONDS": "60"}
        worker = spawn_cli_worker(
            "w1",
            tmp_path,
            "chaos_app:app",
            env,
            executors=JOBS,
            heartbeat=HEARTBEAT,
            poll=0.05,
            shutdown_grace=GRACE,
        )
        children.append(worker)
        try:
            started = 0
            while started < JOBS:
                wait_for_line([worker], lambda c, line: line.startswith("STARTED "), 30)
                started += 1

            _database_down(proxy)
            signalled = _clock.monotonic()
            code = worker.terminate(timeout=GRACE + 10)
            took = _clock.monotonic() - signalled
            lines = read_to_end(worker, 5)
            output = "\n".join(lines)
            assert took <= GRACE + 1.0, f"exit took {took:.2f} s\n{output}"
            assert code == 0, output
            assert "Traceback" not in output, output
            assert any("could not record its stop" in line for line in lines), output
            assert any(line.endswith("stopped") for line in lines), output
            # Nothing could be handed back: the three jobs are still leased to the dead worker.
            for ref in refs:
                assert producer.get(ref).status is JobStatus.EXECUTING

            # The database comes back; a peer's recovery takes the jobs back and runs them.
            proxy.accept()
            peer_env = {**env, "JOB_SECONDS": "0"}
            peer = spawn_worker(
                "w2",
                tmp_path,
                "chaos_app:app",
                peer_env,
                heartbeat=HEARTBEAT,
                poll=0.05,
                executors=JOBS,
                shutdown_grace=GRACE,
            )
            children.append(peer)
            rerun: set[str] = set()
            while len(rerun) < JOBS:
                _, line = wait_for_line([peer], lambda c, line: line.startswith("STARTED "), 20)
                rerun.add(line.split()[1])
            assert peer.terminate() == 0
            read_to_end(peer, 5)
        finally:
            for child in children:
                if child.process.poll() is None:
                    child.process.kill()
                    child.process.wait()

    for ref in refs:
        assert producer.get(ref).status is JobStatus.SUCCEEDED
        codes = [e.code for e in producer.events(ref)]
        assert codes.count(EventCode.LEASE_LOST) == 1, codes
        assert EventCode.HANDED_BACK not in codes, codes
        assert codes.count(EventCode.EXECUTION_STARTED) == 2, codes
    producer.close()
