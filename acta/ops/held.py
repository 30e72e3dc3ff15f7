"""Verdicts for jobs that are out of the queue without being finished: leased to a worker
(live, silent or lost), parked on a durable wait (sleep, signal, children) or paused.

A lease is judged by the worker row and the lease's expiry, read with the database clock: a
worker that stopped or was declared dead, or a lease already past its expiry, is lost (the
next recovery pass takes the job back); a worker that missed two heartbeats is silent (its
lease still stands, recovery may take the job when it lapses); anything else is live.
"""

from __future__ import annotations

from datetime import timedelta

from acta.instant import timer
from acta.model.codes import EventCode, JobStatus, WaitKind, WorkerStatus
from acta.ops.evidence import Evidence
from acta.ops.explanation import Explanation, Verdict, span, when
from acta.ops.verdict import VERDICTS, Stage, explained

_LEASED = (JobStatus.DISPATCHED, JobStatus.EXECUTING)


@VERDICTS.add(*_LEASED, stage=Stage.GENERAL)
def leased(evidence: Evidence) -> Explanation:
    job, now = evidence.job, evidence.now
    worker, expires = job["lease_worker"], evidence.at("lease_expires_at")
    beat, beat_ms = evidence.at("lease_heartbeat_at"), job["lease_heartbeat_ms"]
    worker_status = (
        None if job["lease_worker_status"] is None else WorkerStatus(job["lease_worker_status"])
    )
    age = None if beat is None else now - beat
    running = evidence.status is JobStatus.EXECUTING
    cancel = bool(job["control"])
    common = {
        "worker": worker,
        "worker_host": job["lease_host"],
        "worker_status": None if worker_status is None else worker_status.label,
        "heartbeat_at": beat,
        "heartbeat_age": age,
        "lease_expires_at": expires,
        "lease_epoch": job["lease_epoch"],
        "execution": job["executions"] if running else None,
        "attempt": job["attempts"] + 1,
        "cancel_requested": cancel,
        "locks_held": list(evidence.locks) if running else None,
    }
    lapsed = expires is None or expires < now
    if worker_status is not WorkerStatus.ACTIVE or lapsed:
        gone = "is gone" if worker_status is None else f"is {worker_status.label}"
        state = f"its lease lapsed at {when(expires)}" if lapsed else f"that worker {gone}"
        take = "on its next pass" if lapsed else f"once the lease lapses at {when(expires)}"
        return explained(
            evidence,
            Verdict.HELD_BY_LOST_WORKER,
            f"It is leased to worker {worker}, but {state}. Recovery takes it back {take}, "
            f"and retries it (attempt {job['attempts'] + 2} of {job['max_attempts']}) or fails "
            "it when no attempt is left.",
            "Nothing to do while any worker of its namespace runs: recovery is one of its jobs.",
            recovery_from=expires,
            **common,
        )
    if age is not None and age.total_seconds() * 1000 > beat_ms * 2:
        return explained(
            evidence,
            Verdict.HELD_BY_SILENT_WORKER,
            f"It is leased to worker {worker}, which has not heartbeated for {span(age)} "
            f"(every {span(timedelta(milliseconds=beat_ms))} is expected). Its lease stands "
            f"until {when(expires)}; "
            "if no heartbeat renews it by then, recovery takes the job back.",
            f"Check worker {worker} on {job['lease_host']} (paused, overloaded, partitioned?); "
            f"otherwise recovery takes the job back after {when(expires)}.",
            recovery_from=expires,
            **common,
        )
    doing = "its handler runs" if running else "it is claimed and its handler is about to start"
    verdict = Verdict.EXECUTING if running else Verdict.DISPATCHED
    asked = " An operator asked to cancel it: it is cancelled when this run ends." if cancel else ""
    if evidence.locks:
        keys = ", ".join(repr(key) for key in evidence.locks)
        asked += f" It holds the lock{'s' if len(evidence.locks) > 1 else ''} {keys}."
    return explained(
        evidence,
        verdict,
        f"{doing[0].upper()}{doing[1:]} on worker {worker} ({job['lease_host']}), "
        f"attempt {job['attempts'] + 1} of {job['max_attempts']}; the worker heartbeated "
        f"{span(age or timedelta(0))} ago and its lease runs to {when(expires)}.{asked}",
        f"Nothing to do: the run settles it. Watch it with acta jobs events {evidence.ref}.",
        **common,
    )


@VERDICTS.add(JobStatus.SUSPENDED, stage=Stage.GENERAL)
def suspended(evidence: Evidence) -> Explanation:
    job, wait, now = evidence.job, evidence.wait, evidence.now
    due = timer(job["next_run_at"])
    if wait is None:
        return explained(
            evidence,
            Verdict.SUSPENDED,
            "It is parked on a durable wait, but the ledger no longer names the wait.",
            f"It comes back {'at ' + when(due) if due else 'only when released'}.",
            wakes_at=due,
        )
    common = {"wait_kind": wait.kind.label, "wait_name": wait.name, "armed_at": wait.armed_at}
    if wait.kind is WaitKind.SLEEP:
        left = (wait.due_at or now) - now
        return explained(
            evidence,
            Verdict.SLEEPING,
            f"It sleeps (durable sleep {wait.name!r}) until {when(wait.due_at)}"
            + (f", {span(left)} from now." if left.total_seconds() > 0 else "; the sleep is over."),
            "Nothing to do: a worker resumes its handler when the sleep ends (the next free "
            "one, once it is over); completed steps are not run again.",
            wakes_at=wait.due_at,
            **common,
        )
    timed_out = wait.due_at is not None and wait.due_at <= now
    if timed_out:
        timeout = f"; its timeout passed at {when(wait.due_at)}"
    elif wait.due_at is not None:
        timeout = f"; it times out at {when(wait.due_at)}"
    else:
        timeout = ", with no timeout"
    resumes = (
        "Nothing to do: the next free worker resumes its handler, where the wait returns timed out."
    )
    if wait.kind is WaitKind.SIGNAL:
        sent = (
            " The signal is already in; the job is released on its next claim."
            if wait.signalled
            else ""
        )
        return explained(
            evidence,
            Verdict.WAITING_FOR_SIGNAL,
            f"It waits for signal {wait.name!r}{timeout}.{sent}",
            resumes
            if timed_out
            else f"Send the signal to release it: acta jobs signal {evidence.ref} {wait.name} "
            "--payload JSON (or app.signal from code).",
            signal=wait.name,
            timeout_at=wait.due_at,
            timed_out=timed_out,
            signalled=wait.signalled,
            **common,
        )
    open_children = int(job["open_children"])
    return explained(
        evidence,
        Verdict.WAITING_FOR_CHILDREN,
        f"It waits for its children: {open_children} of them not finished yet{timeout}.",
        resumes
        if timed_out
        else "Nothing to do: the last child to finish releases it. To see why a child is "
        "slow, explain that child (jobs_view lists its children by parent_ref).",
        open_children=open_children,
        timeout_at=wait.due_at,
        timed_out=timed_out,
        **common,
    )


@VERDICTS.add(JobStatus.PAUSED, stage=Stage.GENERAL)
def paused(evidence: Evidence) -> Explanation:
    event = evidence.newest(EventCode.PAUSED)
    reason = None if event is None else event.message
    return explained(
        evidence,
        Verdict.PAUSED,
        "It is paused: its handler paused it for an operator"
        + (f" ({reason})." if reason else ".")
        + " Nothing claims it until someone resumes it.",
        f"Resume it when ready: acta jobs resume {evidence.ref} (or app.resume from code).",
        paused_at=None if event is None else event.at,
        pause_reason=reason,
    )
