"""Lease recovery without real waiting: kill or freeze a worker, let a peer take the job back."""

from __future__ import annotations

from acta import Acta, EventCode, JobContext, JobStatus, Reason, WorkerStatus
from acta_testing import Host


def test_killed_worker_job_is_finished_by_peer(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    ran_on: list[str] = []

    @acta_app.job("render-report")
    def render(ctx: JobContext) -> str:
        ran_on.append(f"execution {ctx.execution}")
        if ctx.execution == 1:
            acta_host.kill(first)  # the process dies mid-run: nothing after this is written
        return "rendered"

    ref = render.enqueue()
    assert acta_host.tick(first) == "killed"
    stuck = acta_host.job(ref)
    assert stuck.status is JobStatus.EXECUTING  # the dead worker still "holds" it

    # Nothing is claimable until the lease (4 heartbeats) lapses and recovery runs.
    assert acta_host.tick(peer) == "nothing-claimed"
    acta_host.advance(first.lease)
    assert acta_host.tick(peer) == "nothing-claimed"  # expiry is strict: not yet past it
    acta_host.advance(peer.heartbeat)
    assert acta_host.tick(peer) == "completed"  # recovery ran first, then the job

    job = acta_host.job(ref)
    assert job.status is JobStatus.SUCCEEDED
    assert (job.executions, job.attempts) == (2, 1)  # the lost run spent an attempt
    events = acta_host.events(ref)
    assert [e.code for e in events] == [
        EventCode.ENQUEUED,
        EventCode.EXECUTION_STARTED,
        EventCode.LEASE_LOST,
        EventCode.EXECUTION_STARTED,
        EventCode.EXECUTION_FINISHED,
        EventCode.SUCCEEDED,
    ]
    lost = events[2]
    assert lost.execution == 1 and lost.reason is Reason.LEASE_EXPIRED
    assert lost.worker == first.incarnation  # names the worker that lost the execution
    assert events[1].worker == first.incarnation and events[3].worker == peer.incarnation
    assert ran_on == ["execution 1", "execution 2"]


def test_silent_worker_is_declared_dead(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    acta_host.tick(first)  # registers
    acta_host.kill(first)
    acta_host.advance(first.dead_after + peer.heartbeat)
    acta_host.tick(peer)
    states = {w.incarnation: w.status for w in acta_app.workers()}
    assert states[first.incarnation] is WorkerStatus.DEAD
    assert states[peer.incarnation] is WorkerStatus.ACTIVE


def test_zombie_write_is_fenced_and_recorded(acta_app: Acta, acta_host: Host) -> None:
    zombie = acta_host.worker
    peer = acta_host.add_worker()
    outcomes: list[str] = []

    @acta_app.job("slow-export")
    def export(ctx: JobContext) -> str:
        if ctx.execution == 1:
            acta_host.pause(zombie)  # SIGSTOP: heartbeats stop, the handler keeps going
            acta_host.advance(zombie.lease + peer.heartbeat)
            outcomes.append(acta_host.tick(peer))  # peer recovers and re-runs the job
            acta_host.resume(zombie)
        return f"export from execution {ctx.execution}"

    ref = export.enqueue()
    assert acta_host.tick(zombie) == "lease-lost"
    assert outcomes == ["completed"]

    job = acta_host.job(ref)
    assert job.status is JobStatus.SUCCEEDED and job.executions == 2
    assert acta_app.result(ref) == "export from execution 2"  # the zombie's result was refused
    events = acta_host.events(ref)
    fenced = [e for e in events if e.code is EventCode.WRITE_FENCED]
    assert len(fenced) == 1
    assert fenced[0].worker == zombie.incarnation and fenced[0].epoch == 1
    # The fenced write changed nothing: the last state change is still the peer's success.
    assert [e.code for e in events][-3:] == [
        EventCode.EXECUTION_FINISHED,
        EventCode.SUCCEEDED,
        EventCode.WRITE_FENCED,
    ]


def test_lapsed_attempts_can_exhaust_the_budget(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("poison", max_attempts=1)
    def poison(ctx: JobContext) -> None:
        acta_host.kill(first)

    ref = poison.enqueue()
    assert acta_host.tick(first) == "killed"
    acta_host.advance(first.lease + peer.heartbeat)
    assert acta_host.tick(peer) == "nothing-claimed"
    job = acta_host.job(ref)
    assert job.status is JobStatus.FAILED and job.attempts == 1
    assert acta_host.event_names(ref)[-2:] == ["lease-lost", "failed"]


def test_worker_declared_dead_registers_again(acta_app: Acta, acta_host: Host) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    acta_host.tick(first)
    old = first.incarnation
    acta_host.pause(first)
    acta_host.advance(first.dead_after + peer.heartbeat)
    acta_host.tick(peer)  # recovery declares it dead
    acta_host.resume(first)
    acta_host.advance(first.heartbeat)  # its next heartbeat finds out
    assert first.incarnation != old
    states = {w.incarnation: w.status for w in acta_app.workers()}
    assert states[old] is WorkerStatus.DEAD and states[first.incarnation] is WorkerStatus.ACTIVE


def test_graceful_stop_mid_run_hands_the_job_back(acta_app: Acta, acta_host: Host) -> None:
    leaving = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("reindex")
    def reindex(ctx: JobContext) -> str:
        if ctx.execution == 1:
            acta_host.stop(leaving)  # SIGTERM while the handler runs, no grace left
            ctx.raise_if_cancelled()
        return f"done on execution {ctx.execution}"

    ref = reindex.enqueue()
    assert acta_host.tick(leaving) == "rearmed"
    job = acta_host.job(ref)
    assert job.status is JobStatus.READY and job.attempts == 0  # handed back, nothing spent
    assert acta_host.event_names(ref)[-2:] == ["execution-finished", "handed-back"]
    assert acta_host.tick(peer) == "completed"
    states = {w.incarnation: w.status for w in acta_app.workers()}
    assert states[leaving.incarnation] is WorkerStatus.STOPPED
