"""The durable-wait checks of anvil/checks (``WAITS``), on SQLite and PostgreSQL: each can fail.

``sleep_honoured``, ``signal_received_once`` and ``children_settled`` judge the jobs of the
certification's sleeping, signalled and children workloads. A real run through the test host,
with those workloads' own handlers (anvil/certify/workloads) writing their witness and
handler-runs rows, leaves a ledger on which all three return nothing, though it holds what the
rules must allow: a sleep re-entered after its end, a signal sent before the job waited and
one sent while it waited, a parent released by its last child. Then rows written or removed
directly, the way a broken core would leave them, make each check return exactly the
violations planted. Rows are written and read through connections of the test's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from planting import certify_planter

from acta import Acta, EventCode
from acta.provider.protocol import Provider
from acta.provider.testing import LedgerLocation
from acta_testing import Host
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import children, signalled, sleeping
from anvil.checks import WAITS, describe
from anvil.checks.plant import Planter

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)  # before any instant of the run
PARAMS = sleeping.WORKLOAD.params | signalled.WORKLOAD.params | children.WORKLOAD.params


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    """Each test here runs on both dialects, whatever ``--acta-provider`` says."""
    return either_dialect


@pytest.fixture
def direct(acta_provider: Provider) -> Iterator[Planter]:
    """The test's own connection to the ledger, with the certification's tables beside it."""
    with certify_planter(acta_provider, BASE) as found:
        yield found


def _sink(location: LedgerLocation) -> Sink:
    database = str(location.path) if location.dialect == "sqlite" else str(location.dsn)
    return Sink(location.dialect, database, location.schema)


def _run(acta_app: Acta, acta_host: Host, direct: Planter) -> dict[str, list[str]]:
    """Two sleepers, five signalled jobs (two signalled before they wait, three while they
    wait) and five parents, through the workloads' handlers; {workload: refs}, all succeeded."""
    sink = _sink(direct.location)
    for module in (sleeping, signalled, children):
        module.register(acta_app, sink)
    refs = {
        "sleeping": [str(acta_app.enqueue(sleeping.JOB, n)) for n in range(2)],
        "signalled": [str(acta_app.enqueue(signalled.JOB, n)) for n in range(5)],
        "children": [str(acta_app.enqueue(children.PARENT, n)) for n in range(5)],
    }
    for ref in refs["signalled"][:2]:
        acta_app.signal(ref, signalled.SIGNAL, signalled.payload(ref))  # kept for the wait
    acta_host.run_until_idle()
    for ref in refs["signalled"][2:]:
        acta_app.signal(ref, signalled.SIGNAL, signalled.payload(ref))  # releases the wait
    acta_host.advance(sleeping.NAP * 2)
    acta_host.run_until_idle()
    sink.close()
    statuses = {job.job_ref: job.status.label for job in acta_app.jobs()}
    assert set(statuses.values()) == {"succeeded"}, statuses
    assert len(statuses) == 2 + 5 + 5 * (1 + children.CHILDREN)
    return refs


def _found(direct: Planter, name: str) -> set[tuple[str, str]]:
    return {(row["job_ref"], row["problem"]) for row in direct.check(name, **PARAMS)}


def _job_id(direct: Planter, ref: str) -> int:
    return direct.job(ref)[0]


def test_a_run_of_the_workloads_passes_every_wait_check(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    refs = _run(acta_app, acta_host, direct)
    # The run did what the checks judge: each sleeper slept (a wait row) and ran twice, each
    # effect saw its own payload, each parent has its children.
    for ref in refs["sleeping"]:
        assert (
            len(
                direct.execute(
                    "SELECT 1 FROM {schema}.waits WHERE job_id = :j", j=_job_id(direct, ref)
                )
            )
            == 1
        )
    tokens = dict(
        direct.execute("SELECT job_ref, token FROM {schema}.witness WHERE step = 'effect'")
    )
    assert tokens == {ref: signalled.payload(ref) for ref in refs["signalled"]}
    for name in WAITS:
        rows = direct.check(name, **PARAMS)
        assert rows == [], describe(name, rows)


def test_an_early_wake_and_a_sleep_never_taken_are_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    early, skipped = _run(acta_app, acta_host, direct)["sleeping"]
    # A run that went past the sleep, started long before the sleep was due.
    direct.event(early, EventCode.EXECUTION_STARTED, 9, 9, at=LONG_AGO)
    direct.execute(
        "INSERT INTO {schema}.witness (job_ref, step, execution, pid, token) "
        "VALUES (:ref, :step, 9, 1, 'planted')",
        ref=early,
        step=sleeping.AFTER,
    )
    # A succeeded sleeper with no sleep behind it.
    direct.execute("DELETE FROM {schema}.waits WHERE job_id = :j", j=_job_id(direct, skipped))
    assert _found(direct, "sleep_honoured") == {
        (early, "woke before its sleep was due"),
        (skipped, "succeeded without sleeping"),
    }


def test_signal_violations_are_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    twice, unsignalled, stranger, no_effect, _ = _run(acta_app, acta_host, direct)["signalled"]
    direct.event(twice, EventCode.SIGNALLED, message=signalled.SIGNAL)
    direct.execute(
        "DELETE FROM {schema}.events WHERE job_ref = :ref AND code = 25", ref=unsignalled
    )
    direct.execute(
        "UPDATE {schema}.witness SET token = :token WHERE job_ref = :ref",
        token=signalled.payload(twice),
        ref=stranger,
    )
    direct.execute("DELETE FROM {schema}.witness WHERE job_ref = :ref", ref=no_effect)
    assert _found(direct, "signal_received_once") == {
        (twice, "signalled more than once"),
        (unsignalled, "succeeded without being signalled"),
        (stranger, "its effect saw another payload"),
        (no_effect, "succeeded without its effect"),
    }


def test_children_violations_are_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    early, robbed, doubled, latched, _ = _run(acta_app, acta_host, direct)["children"]
    # One of early's children ends (again) after its parent succeeded.
    [(child,)] = direct.execute(
        "SELECT job_ref FROM {schema}.jobs WHERE parent_id = :p AND child_name = 'child-0'",
        p=_job_id(direct, early),
    )
    direct.event(child, EventCode.SUCCEEDED)
    # One of robbed's children moves to doubled: one too few there, one too many here.
    direct.execute(
        "UPDATE {schema}.jobs SET parent_id = :to, child_name = 'child-9' "
        "WHERE parent_id = :p AND child_name = 'child-0'",
        to=_job_id(direct, doubled),
        p=_job_id(direct, robbed),
    )
    direct.execute(
        "UPDATE {schema}.runtime SET open_children = 1 WHERE job_id = :j",
        j=_job_id(direct, latched),
    )
    assert _found(direct, "children_settled") == {
        (early, "succeeded before a child succeeded"),
        (robbed, "children missing"),
        (doubled, "child spawned twice"),
        (latched, "latch left"),
    }
