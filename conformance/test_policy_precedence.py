"""Policy precedence (issue 27, item 3): the policy in force is the job's own value (an
operator's amend), else the definition's live override, else its declaration. Every place that
shows a policy (``get``, ``jobs``, ``explain``, ``jobs_view``, ``effective_policy_view``, the
dashboard's reads, ``ops.policy``) must show what the worker applies, so each spec below reads
them all and then lets the worker act on the same job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acta import Acta
from acta.dashboard.filters import JobFilter
from acta.dashboard.source import Source
from acta.definition import JobDefinition
from acta.policy.override import stored_key
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def attempts_shown(app: Acta, ledger: Ledger, ref: Any) -> dict[str, object]:
    """The attempt limit of ``ref`` as every read surface states it."""
    board = {row["job_ref"]: row for row in Source(app).jobs(JobFilter())["jobs"]}
    return {
        "get": app.get(ref).max_attempts,
        "jobs": {str(j.job_ref): j.max_attempts for j in app.jobs()}[str(ref)],
        "explain": app.ops.explain(ref).facts["max_attempts"],
        "jobs_view": ledger.value(
            "SELECT max_attempts FROM {schema}.jobs_view WHERE job_ref = :ref", {"ref": str(ref)}
        ),
        "dashboard": board[str(ref)]["max_attempts"],
    }


def failing_job(app: Acta) -> JobDefinition[Any, Any]:
    """A job declared with five attempts that fails every run."""

    @app.job("flaky", max_attempts=5, backoff="1s")
    def flaky() -> None:
        raise RuntimeError("always")

    return flaky


def test_a_live_attempts_override_is_what_every_read_shows_and_the_worker_obeys(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    flaky = failing_job(acta_app)
    acta_host.advance(0)
    ref = flaky.enqueue()
    assert set(attempts_shown(acta_app, ledger, ref).values()) == {5}
    acta_app.ops.policy.set("flaky", max_attempts=2, expected_version=0, reason="too many")
    assert attempts_shown(acta_app, ledger, ref) == dict.fromkeys(
        ("get", "jobs", "explain", "jobs_view", "dashboard"), 2
    )
    acta_host.advance(acta_host.worker.heartbeat)  # the worker hears of it at its heartbeat
    assert acta_host.tick() == "rearmed"
    acta_host.advance("1s")
    assert acta_host.tick() == "failed"  # what the reads said: attempt 2 of 2
    assert acta_app.get(ref).attempts == 2
    assert set(attempts_shown(acta_app, ledger, ref).values()) == {2}


def test_a_jobs_own_limit_beats_the_override_everywhere(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    flaky = failing_job(acta_app)
    acta_host.advance(0)
    amended, other = flaky.enqueue(), flaky.enqueue()
    acta_app.ops.policy.set("flaky", max_attempts=3, expected_version=0)
    acta_app.repairs.amend(amended, max_attempts=1)
    assert set(attempts_shown(acta_app, ledger, amended).values()) == {1}
    assert set(attempts_shown(acta_app, ledger, other).values()) == {3}
    acta_host.advance(acta_host.worker.heartbeat)
    acta_host.run_until_idle()
    assert acta_app.get(amended).status.label == "failed"
    assert acta_app.get(amended).attempts == 1  # its own limit, not the override's 3


# Every overridable field, set to a value unlike the declaration: (operator input, what the
# worker's policy holds, what effective_policy_view shows).
OVERRIDES: dict[str, tuple[object, object, object]] = {
    "max_attempts": (2, 2, 2),
    "backoff": ("5s..1m x2", "5s..1m x2", "5s..1m x2"),
    "timeout": ("30s", 30.0, 30000),
    "audit": ("off", "off", "off"),
    "retention": ("2d", 172800.0, 172_800_000),
    "alerts": ("all", "all", "all"),
    "priority": (40, 40, 40),
}
# effective_policy_view names its columns as an override stores its keys.
VIEW_COLUMNS = {field: stored_key(field) for field in OVERRIDES}


def worker_value(field: str, value: Any) -> object:
    """A JobPolicy field as the table above writes it."""
    if field in ("timeout", "retention"):
        return None if value is None else value.total_seconds()
    if field in ("audit", "alerts"):
        return getattr(value, "label", None) or getattr(value, "value", value)
    return str(value) if field == "backoff" else value


def test_every_overridable_field_shows_as_the_worker_applies_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("report", max_attempts=7, backoff="2s", timeout="1m", retention="1d")
    def report() -> None: ...

    acta_host.advance(0)
    inputs = {field: given for field, (given, _, _) in OVERRIDES.items()}
    acta_app.ops.policy.set("report", **inputs, expected_version=0)
    acta_host.advance(acta_host.worker.heartbeat)  # the worker reads overrides at its heartbeat

    applied = acta_host.worker.env.definition("report")
    assert applied is not None
    worker = {f: worker_value(f, getattr(applied.policy, f)) for f in OVERRIDES}
    in_force = acta_app.ops.policy.get("report").effective
    assert in_force is not None
    ops = {f: worker_value(f, getattr(in_force, f)) for f in OVERRIDES}
    columns = ", ".join(VIEW_COLUMNS.values())
    [viewed] = ledger.rows(
        f"SELECT {columns} FROM {{schema}}.effective_policy_view WHERE job_name = 'report'"
    )
    listed = Source(acta_app).definitions()["definitions"]
    [board] = [d for d in listed if d["job_name"] == "report"]
    expected_worker = {f: shown for f, (_, shown, _) in OVERRIDES.items()}
    expected_view = {f: shown for f, (_, _, shown) in OVERRIDES.items()}
    assert worker == expected_worker
    assert ops == expected_worker
    assert dict(zip(VIEW_COLUMNS, viewed, strict=True)) == expected_view
    assert {f: board[c] for f, c in VIEW_COLUMNS.items()} == expected_view
