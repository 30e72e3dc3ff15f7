"""The "acta ledger" section of a failed test's report: every job and its timeline."""

from __future__ import annotations

from acta.app import Acta

MAX_JOBS = 50


def ledger_section(app: Acta) -> str:
    """Jobs (newest first, system jobs included) with their events, as plain text."""
    try:
        jobs = app.jobs(limit=MAX_JOBS, include_system=True)
    except Exception as exc:  # the report must never hide the test's own failure
        return f"(could not read the ledger: {exc})"
    if not jobs:
        return "(no jobs)"
    lines: list[str] = []
    for job in jobs:
        lines.append(
            f"{job.job_ref} {job.name} {job.status.label} attempts={job.attempts}/"
            f"{job.max_attempts} executions={job.executions} "
            f"next_run_at={job.next_run_at:%Y-%m-%d %H:%M:%S}"
        )
        try:
            events = app.events(job.job_ref)
        except Exception as exc:
            lines.append(f"    (events unreadable: {exc})")
            continue
        for e in events:
            parts = [f"    {e.at:%H:%M:%S.%f}"[:-3], e.code.label]
            if e.execution is not None:
                parts.append(f"#{e.execution}")
            if e.outcome is not None:
                parts.append(e.outcome.label)
            if e.reason is not None:
                parts.append(f"({e.reason.label})")
            if e.message:
                parts.append(e.message.splitlines()[0][:120])
            lines.append(" ".join(parts))
    return "\n".join(lines)
