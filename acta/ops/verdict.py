"""The verdict table: how explain turns a job's evidence into one ``Explanation``.

A verdict is a small function of the evidence that either recognises the job's situation and
explains it, or returns None to let the next one try. ``VERDICTS`` keeps them in order, each
filed under the statuses it can explain; the first that answers wins, so a specific verdict
(a bounced job) goes before a general one (a job waiting for its run-at). The order is that
of ``Stage`` first (a situation that overrides the rest, such as nobody alive to run a due
job, comes before everything), then of filing within a stage, so it never depends on which
module was imported first. Every status ends in a catch-all, so explain always answers. A
capability that adds a situation (a paused definition, a tenant's suspension) files its own
function at the stage it needs instead of editing the others.

``explained`` builds the answer with the facts every explanation carries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from acta.instant import timer
from acta.model.codes import JobStatus
from acta.ops.evidence import Evidence
from acta.ops.explanation import Explanation, Verdict, facts

Rule = Callable[[Evidence], Explanation | None]


class Stage(IntEnum):
    """When a verdict is tried, relative to the others for the same status."""

    OVERRIDING = 10
    """Situations that make every other answer moot (nobody can run the job)."""
    SPECIFIC = 20
    """A recognisable situation (bounced, retrying, held by a silent worker)."""
    GENERAL = 30
    """The catch-all of a status."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One verdict function, the statuses it is asked about and its stage."""

    name: str
    statuses: frozenset[JobStatus]
    rule: Rule
    stage: Stage


class VerdictTable:
    """Verdict functions in the order they are tried."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []

    def add(self, *statuses: JobStatus, stage: Stage = Stage.SPECIFIC) -> Callable[[Rule], Rule]:
        """Decorator: file ``rule`` under ``statuses``, after the rules of its ``stage`` filed
        so far and before every rule of a later stage."""

        def file(rule: Rule) -> Rule:
            entry = Entry(rule.__name__, frozenset(statuses), rule, stage)
            if any(e.name == entry.name for e in self._entries):
                raise ValueError(f"a verdict named {entry.name!r} is already in the table")
            self._entries.append(entry)
            self._entries.sort(key=lambda e: e.stage)  # stable: filing order within a stage
            return rule

        return file

    def entries(self) -> tuple[Entry, ...]:
        """Every filed verdict, in the order they are tried."""
        return tuple(self._entries)

    def names(self, status: JobStatus) -> list[str]:
        """The verdict functions tried for ``status``, in order."""
        return [e.name for e in self._entries if status in e.statuses]

    def judge(self, evidence: Evidence) -> Explanation:
        for entry in self._entries:
            if evidence.status in entry.statuses:
                found = entry.rule(evidence)
                if found is not None:
                    return found
        # Unreachable while every status has its catch-all (a test holds the table to it).
        raise LookupError(f"no verdict explains status {evidence.status.label}")


VERDICTS = VerdictTable()


def explained(
    evidence: Evidence, verdict: Verdict, summary: str, next_step: str, **extra: Any
) -> Explanation:
    """An explanation of ``evidence`` with the facts every one carries, plus ``extra``."""
    job = evidence.job
    common = facts(
        namespace=job["namespace"],
        priority=job["priority"],
        attempts=job["attempts"],
        max_attempts=job["max_attempts"],
        executions=job["executions"],
        created_at=job["created_at"],
        next_run_at=None if job["status"] >= 100 else timer(job["next_run_at"]),
        checked_at=evidence.now,
    )
    tenant = job.get("tenant")
    if tenant is not None:
        # The tenant never changes a verdict (admitted jobs run on), but a suspension is
        # what an operator asks about first when a tenant's work seems to stop arriving.
        suspended = bool(job["tenant_suspended"])
        common.update(facts(tenant=tenant, tenant_suspended=suspended))
        if suspended:
            summary += (
                f" Its tenant {tenant!r} is suspended: new jobs for it are refused, but this "
                "one was admitted before and runs as usual."
            )
    return Explanation(
        job_ref=evidence.ref,
        name=job["name"],
        status=evidence.status.label,
        verdict=verdict,
        summary=summary,
        next_step=next_step,
        facts={**common, **facts(**extra)},
    )
