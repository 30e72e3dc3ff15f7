"""``acta jobs debug`` underneath (issue 12): a persisted job claimed by a debugging worker of
its own, run after a breakpoint and settled like any run; a job another worker holds is
refused and left as it is.
"""

from __future__ import annotations

import asyncio

import pytest

from acta import Acta, JobStatus, SyncJobContext
from acta.runtime.debugging import DebugRefusedError, debug_job
from acta.runtime.run import RunEnd
from acta_testing import Host


def test_a_debugged_run_is_an_ordinary_fenced_run(acta_app: Acta, acta_host: Host) -> None:
    stops: list[str] = []

    @acta_app.job("greet")
    def greet(name: str) -> str:
        return f"hello {name}"

    ref = greet.enqueue("ann")
    done = asyncio.run(
        debug_job(acta_app.deployment(), str(ref), hook=lambda: stops.append("stop"))
    )
    assert (done.ended, done.status, stops) == (RunEnd.COMPLETED, JobStatus.SUCCEEDED, ["stop"])
    assert acta_app.result(ref) == "hello ann"
    names = [e.code.label for e in acta_app.events(ref)]
    assert names == ["enqueued", "execution-started", "execution-finished", "succeeded"]


def test_a_job_running_on_another_worker_is_refused(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("stuck")
    def stuck(ctx: SyncJobContext) -> None:
        acta_host.kill()  # its worker dies mid-run: the lease stays until it lapses

    ref = stuck.enqueue()
    assert acta_host.tick() == "killed"
    with pytest.raises(DebugRefusedError, match="running on a worker"):
        asyncio.run(debug_job(acta_app.deployment(), str(ref), stop=False))
    assert acta_app.get(ref).status is JobStatus.EXECUTING
