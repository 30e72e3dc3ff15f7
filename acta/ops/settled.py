"""Verdicts for finished jobs: succeeded (when, after how long), failed (why, the last
error, how to run it again) and cancelled (by whom).

The reason comes from the newest terminal event, which acta writes at every audit level for
a failure and for an operator's cancel; a definition at audit level ``off`` can leave a job
whose handler cancelled it without a word, and the explanation then says the ledger does not
record who did it rather than guessing.
"""

from __future__ import annotations

from acta.model.codes import EventCode, JobStatus, Outcome, Reason
from acta.ops.evidence import Evidence
from acta.ops.explanation import Explanation, Verdict, first_line, span, when
from acta.ops.verdict import VERDICTS, Stage, explained

_RERUN = (
    "To run it again with its stored input (same ref, full attempts): acta jobs restart {ref} "
    "--reason TEXT, or app.repairs.restart(ref)."
)


@VERDICTS.add(JobStatus.SUCCEEDED, stage=Stage.GENERAL)
def succeeded(evidence: Evidence) -> Explanation:
    job = evidence.job
    finished = job["updated_at"]
    took = finished - job["created_at"]
    run = evidence.newest(EventCode.EXECUTION_FINISHED, outcomes=(Outcome.SUCCEEDED,))
    asked = evidence.newest(EventCode.CANCEL_REQUESTED)
    late = " A cancel was asked for, but the run finished first: a success stands." if asked else ""
    return explained(
        evidence,
        Verdict.SUCCEEDED,
        f"It succeeded at {when(finished)}, {span(took)} after it was enqueued, in "
        f"{job['executions']} run(s) and {job['attempts'] + 1} attempt(s).{late}",
        "Nothing to do. Its result: acta jobs show " + evidence.ref + ".",
        finished_at=finished,
        took=took,
        last_run_ms=None if run is None else run.duration_ms,
        cancel_requested=asked is not None,
    )


_FAILED_BECAUSE = {
    Reason.ATTEMPTS_EXHAUSTED: "its last allowed attempt failed",
    Reason.DEADLINE: "its strict deadline passed",
    Reason.WAIT_TIMED_OUT: "a wait it was parked on timed out",
    Reason.STEP_INTERRUPTED: "an at-most-once step was interrupted and must not run again",
    Reason.INPUT_UNDECODABLE: "its stored input no longer decodes into the handler's input type",
    Reason.HANDLER_DECIDED: "its handler failed it on purpose",
    Reason.LEASE_EXPIRED: "its worker stopped renewing the lease on its last attempt",
    Reason.WORKER_SILENT: "its worker went silent on its last attempt",
    Reason.RESULT_UNENCODABLE: "its handler's return value could not be stored",
    Reason.HANDLER_ERROR: "its handler raised an error that is not retried",
    Reason.TIMEOUT: "its last attempt ran past the execution timeout",
}


@VERDICTS.add(JobStatus.FAILED, stage=Stage.GENERAL)
def failed(evidence: Evidence) -> Explanation:
    job = evidence.job
    final = evidence.newest(EventCode.FAILED)
    error = evidence.last_error()
    reason = None if final is None else final.reason
    because = (
        _FAILED_BECAUSE.get(reason, "the ledger does not record why")
        if reason
        else ("the ledger does not record why (its audit level writes no failure events)")
    )
    text = error.message if error is not None and error.message else None
    return explained(
        evidence,
        Verdict.FAILED,
        f"It failed at {when(job['updated_at'])} after {job['attempts']} of "
        f"{job['max_attempts']} attempt(s): {because}"
        + (f". Last error: {first_line(text)}" if text else "")
        + ".",
        "Fix the cause first. " + _RERUN.format(ref=evidence.ref),
        finished_at=job["updated_at"],
        reason=None if reason is None else reason.label,
        last_error=text,
        last_error_at=None if error is None else error.at,
    )


@VERDICTS.add(JobStatus.CANCELLED, stage=Stage.GENERAL)
def cancelled(evidence: Evidence) -> Explanation:
    job = evidence.job
    event = evidence.newest(EventCode.CANCELLED)
    asked = evidence.newest(EventCode.CANCEL_REQUESTED)
    reason = None if event is None else event.reason
    if reason in (None, Reason.NONE, Reason.OPERATOR) and asked is not None:
        reason, event = asked.reason, asked  # the request names who asked; the end says none
    said = None if event is None else event.message
    if reason is Reason.OPERATOR:
        by, who = "operator", "an operator cancelled it" + (f" ({said})" if said else "")
    elif reason is Reason.PARENT_GAVE_UP:
        by, who = "parent", f"its parent {job['parent_ref']} stopped waiting for it"
    elif reason is Reason.HANDLER_DECIDED:
        by, who = "handler", "its handler cancelled it" + (f" ({said})" if said else "")
    elif reason is Reason.DEADLINE:
        by, who = "deadline", "its strict deadline passed"
    else:
        by, who = None, "the ledger does not record who cancelled it (audit level)"
    return explained(
        evidence,
        Verdict.CANCELLED,
        f"It was cancelled at {when(job['updated_at'])}: {who}.",
        "Nothing to do. " + _RERUN.format(ref=evidence.ref),
        finished_at=job["updated_at"],
        cancelled_by=by,
        cancel_reason=said,
        parent_ref=job["parent_ref"],
    )
