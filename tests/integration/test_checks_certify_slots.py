"""The certification's own checks (``CERTIFY``) leave a recurring slot to the schedule checks.

A recurring slot is a job row of its definition that never ends: after each firing it is
re-armed (a succeeded run followed by a rearmed event) and runs again, its attempts start
afresh, and no producer enqueued it. Judged as an expected job, it would be stuck,
unexpected, and its runs unexplained. This test fires the certification's scheduled workload
(anvil/certify/workloads/scheduled.py, its real handler and witness rows) a few times through
the test host, on both dialects, and asserts that every certification check and every
schedule check passes, while the ledger does hold what the certify rules would otherwise
flag: a slot below terminal status, with no expected row, run several times.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from planting import certify_planter

from acta import Acta
from acta.provider.protocol import Provider
from acta_testing import Host
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import scheduled
from anvil.checks import CERTIFY, SCHEDULES, describe
from anvil.checks.plant import Planter

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    """Each test here runs on both dialects, whatever ``--acta-provider`` says."""
    return either_dialect


@pytest.fixture
def direct(acta_provider: Provider) -> Iterator[Planter]:
    """The test's own connection to the ledger, with the certification's tables beside it."""
    with certify_planter(acta_provider, BASE) as found:
        yield found


def test_a_firing_slot_passes_the_certification_checks(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    location = direct.location
    database = str(location.path) if location.dialect == "sqlite" else str(location.dsn)
    sink = Sink(location.dialect, database, location.schema)
    scheduled.register(acta_app, sink)
    for _ in range(4):
        acta_host.advance("1s")
        acta_host.run_until_idle()
    sink.close()
    [(status, executions, expected)] = direct.execute(
        "SELECT r.status, r.executions, "
        "(SELECT count(*) FROM {schema}.expected x WHERE x.job_ref = j.job_ref) "
        "FROM {schema}.schedules s JOIN {schema}.jobs j ON j.id = s.slot_id "
        "JOIN {schema}.runtime r ON r.job_id = j.id"
    )
    assert status < 100 and expected == 0 and executions >= 3, (status, executions, expected)
    for name in CERTIFY + SCHEDULES:
        rows = direct.check(name)
        assert rows == [], describe(name, rows)
