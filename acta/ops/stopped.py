"""Verdicts for jobs that nothing will claim because an operator stopped their definition or
namespace, and for the recurring slot a schedule fires through.

A paused or retired definition, or a paused namespace, overrides every other reason a waiting
job has: claims skip it whatever its run-at or place in line. A schedule's slot is a job that
never finishes: explaining it as "waiting for its run-at" would be true but useless, so it
says which schedules it fires and when next.
"""

from __future__ import annotations

from acta.instant import timer
from acta.model.codes import JobStatus
from acta.ops.evidence import Evidence
from acta.ops.explanation import Explanation, Verdict, when
from acta.ops.verdict import VERDICTS, Stage, explained


@VERDICTS.add(JobStatus.READY, JobStatus.SUSPENDED, JobStatus.BLOCKED, stage=Stage.OVERRIDING)
def stopped_by_an_operator(evidence: Evidence) -> Explanation | None:
    job = evidence.job
    name, namespace = job["name"], job["namespace"]
    if job["namespace_paused"]:
        return explained(
            evidence,
            Verdict.NAMESPACE_PAUSED,
            f"Namespace {namespace!r} is paused: no worker claims any of its jobs until an "
            "operator resumes it (running jobs finish).",
            f"Resume the namespace: acta namespaces resume {namespace}.",
            namespace_paused=True,
        )
    if job["definition_retired"]:
        return explained(
            evidence,
            Verdict.DEFINITION_PAUSED,
            f"Job name {name!r} was retired: it is paused for good, and this job will never be "
            "claimed.",
            f"Cancel it (acta jobs cancel {evidence.ref}); a retired name is not resumed.",
            definition_paused=True,
            definition_retired=True,
        )
    if job["definition_paused"]:
        return explained(
            evidence,
            Verdict.DEFINITION_PAUSED,
            f"Job name {name!r} is paused: no worker claims its jobs until an operator resumes "
            "it (running ones finish).",
            f"Resume it: acta definitions resume {name}.",
            definition_paused=True,
            definition_retired=False,
        )
    return None


@VERDICTS.add(JobStatus.READY, stage=Stage.SPECIFIC)
def schedule_slot(evidence: Evidence) -> Explanation | None:
    job = evidence.job
    if not job["schedule_slot"] or job["attempts"]:
        return None  # a firing being retried is explained as a retry
    wakes = timer(job["next_run_at"])
    if wakes is None:
        summary = "It is the recurring slot of job {name!r}'s schedules, all paused."
        step = f"Resume them: acta schedules resume {job['name']}."
    else:
        summary = (
            "It is the recurring slot of job {name!r}'s schedules: it fires their next instant "
            f"at {when(wakes)} and never finishes."
        )
        step = f"See the schedules and their next instants: acta schedules list {job['name']}."
    return explained(
        evidence,
        Verdict.SCHEDULE_SLOT,
        summary.format(name=job["name"]),
        step,
        wakes_at=wakes,
    )
