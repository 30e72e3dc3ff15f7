"""Verdicts for jobs that wait to be claimed: ready (due or not), bounced by a gate,
retrying, behind the head of a lane, or due with nobody able to run them.

Order matters (see ``acta.ops.verdict``): a due job with no worker alive, or none with its
handler, is explained by that first, since no backlog position means anything then; a job
not yet due is bounced, retrying or simply waiting for its run-at, in that order.
"""

from __future__ import annotations

import json

from acta.model.codes import EventCode, JobStatus
from acta.ops.evidence import Evidence
from acta.ops.explanation import Explanation, Verdict, first_line, span, when
from acta.ops.verdict import VERDICTS, Stage, explained

# Events that move a ready job's run-at: the newest of them says why it waits.
_MOVES = (
    EventCode.ENQUEUED,
    EventCode.RETRY_SCHEDULED,
    EventCode.LEASE_LOST,
    EventCode.RESCHEDULED,
    EventCode.HANDED_BACK,
    EventCode.BOUNCED,
    EventCode.RELEASED,
    EventCode.RESUMED,
    EventCode.REARMED,
)


def worker_trouble(evidence: Evidence) -> Explanation | None:
    """For a job that is due: nobody alive to claim it, or nobody with its handler."""
    now, job = evidence.now, evidence.job
    alive = [w for w in evidence.workers if not w.silent(now)]
    namespace = job["namespace"]
    if not alive:
        silent = [w.incarnation for w in evidence.workers]
        return explained(
            evidence,
            Verdict.NO_WORKER_ALIVE,
            f"It is due, but no worker of namespace {namespace!r} is alive to claim it"
            + (f" ({len(silent)} registered worker(s) stopped heartbeating)." if silent else "."),
            f"Start a worker for namespace {namespace!r} with a handler for {job['name']!r} "
            "(acta worker --app MODULE:APP); it claims the job at once.",
            workers_alive=0,
            silent_workers=silent,
        )
    if all(w.lacks_handler for w in alive):
        return explained(
            evidence,
            Verdict.NO_HANDLER,
            f"It is due, but none of the {len(alive)} live worker(s) of namespace "
            f"{namespace!r} has a handler for {job['name']!r}: each handed such a job back.",
            f"Deploy a build that declares a handler for {job['name']!r} in namespace "
            f"{namespace!r}; the job stays ready until then.",
            workers_alive=len(alive),
            workers_without_handler=[w.incarnation for w in alive],
        )
    return None


@VERDICTS.add(JobStatus.BLOCKED, stage=Stage.GENERAL)
def blocked_in_lane(evidence: Evidence) -> Explanation:
    job = evidence.job
    head, head_status = job["lane_head_ref"], job["lane_head_status"]
    if head is None:
        where = "its lane has no head recorded"
    else:
        where = f"job {head} ({JobStatus(head_status).label}) is at the head"
    return explained(
        evidence,
        Verdict.BLOCKED_IN_LANE,
        f"It waits in lane {job['lane']!r} (place {job['lane_seq']}); {where}. Lane members "
        "run one at a time, in enqueue order.",
        "It becomes claimable when every job before it in the lane has finished"
        + (
            f"; if the lane seems stuck, explain its head: acta jobs explain {head}."
            if head
            else "."
        ),
        lane=job["lane"],
        lane_seq=job["lane_seq"],
        lane_head_ref=head,
        lane_head_status=None if head_status is None else JobStatus(head_status).label,
    )


@VERDICTS.add(JobStatus.READY, JobStatus.SUSPENDED, stage=Stage.OVERRIDING)
def nobody_to_run_it(evidence: Evidence) -> Explanation | None:
    return worker_trouble(evidence) if evidence.due else None


@VERDICTS.add(JobStatus.READY)
def ready(evidence: Evidence) -> Explanation | None:
    if not evidence.due:
        return None
    job, ahead = evidence.job, evidence.ahead or 0
    attempt = job["attempts"] + 1
    error = evidence.last_error()
    retry = f" It is attempt {attempt} of {job['max_attempts']}." if job["attempts"] else ""
    waited = evidence.now - job["next_run_at"]
    return explained(
        evidence,
        Verdict.READY,
        f"It is due (since {span(waited)}) and waits for a free worker; {ahead} claimable "
        f"job(s) of its namespace come before it in claim order.{retry}",
        "The next free worker of its namespace claims it; nothing to do unless it stays here.",
        ahead=ahead,
        due_for=waited,
        attempt=attempt,
        last_error=None if error is None else error.message,
        workers_alive=sum(1 for w in evidence.workers if not w.silent(evidence.now)),
    )


@VERDICTS.add(JobStatus.READY)
def bounced(evidence: Evidence) -> Explanation | None:
    job = evidence.job
    if evidence.due:
        return None  # due again: the ready verdict says where it stands
    moved = evidence.newest(*_MOVES)
    by_event = moved is not None and moved.code is EventCode.BOUNCED
    if not by_event and job["ticket_at"] is None:
        return None
    until = job["next_run_at"]
    gate, limit = _gate_of(evidence, moved.detail if by_event and moved else None)
    said = moved.message if by_event and moved and moved.message else None
    return explained(
        evidence,
        Verdict.BOUNCED,
        f"A {gate} gate turned it away before its handler ran"
        + (f" ({said})" if said else "")
        + f"; no attempt was spent. It comes back at {when(until)}.",
        f"Nothing to do: a worker tries again at {when(until)}. If it keeps bouncing, look at "
        "the gate: acta gates list.",
        gate=gate,
        gate_name=limit,
        bounced_until=until,
        gate_message=said,
        gates=[
            {"kind": g.source, "name": g.name, "limit": g.limit, "held": g.held}
            for g in evidence.gates
        ],
    )


def _gate_of(evidence: Evidence, detail: str | None) -> tuple[str, str | None]:
    """Which kind of gate bounced the job (``concurrency`` or ``rate``) and its name."""
    if detail:
        try:
            data = json.loads(detail)
        except ValueError:
            data = {}
        if isinstance(data, dict) and data.get("gate"):
            key = data.get("key")
            return str(data["gate"]), None if key is None else str(key)
    if evidence.job["ticket_at"] is not None:
        return "rate", evidence.job["meter"]
    full = [g for g in evidence.gates if g.source != "meter" and g.held >= g.limit]
    return "concurrency", full[0].name if full else None


@VERDICTS.add(JobStatus.READY)
def retrying(evidence: Evidence) -> Explanation | None:
    job = evidence.job
    if not job["attempts"] or evidence.due:
        return None
    moved = evidence.newest(*_MOVES)
    if moved is not None and moved.code not in (EventCode.RETRY_SCHEDULED, EventCode.LEASE_LOST):
        return None  # it failed before, but something else set its run-at since
    error = evidence.last_error()
    failed = job["attempts"]
    return explained(
        evidence,
        Verdict.RETRYING,
        f"Attempt {failed} of {job['max_attempts']} failed"
        + (f" ({first_line(error.message)})" if error is not None and error.message else "")
        + f"; attempt {failed + 1} runs at {when(job['next_run_at'])}.",
        f"Nothing to do: a worker retries it at {when(job['next_run_at'])}. To stop it "
        f"instead, cancel it from code: app.cancel({evidence.ref!r}).",
        attempt=failed + 1,
        retry_at=job["next_run_at"],
        last_error=None if error is None else error.message,
        last_error_at=None if error is None else error.at,
        last_error_reason=None if error is None or error.reason is None else error.reason.label,
    )


@VERDICTS.add(JobStatus.READY, stage=Stage.GENERAL)
def waiting_for_run_at(evidence: Evidence) -> Explanation:
    job = evidence.job
    moved = evidence.newest(*_MOVES)
    why = "its run-at"
    if moved is not None and moved.code is EventCode.RESCHEDULED:
        why = "the run-at its handler asked for" + (f" ({moved.message})" if moved.message else "")
    elif moved is not None and moved.code is EventCode.REARMED:
        why = "its next recurring run"
    left = job["next_run_at"] - evidence.now
    return explained(
        evidence,
        Verdict.WAITING_FOR_RUN_AT,
        f"It waits for {why}: {when(job['next_run_at'])}, {span(left)} from now.",
        f"Nothing to do: it becomes claimable at {when(job['next_run_at'])}.",
        run_at=job["next_run_at"],
        due_in=left,
    )
