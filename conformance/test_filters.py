"""Caller input acta must refuse the same way on every provider (issue 8 item 9).

An instant that is valid Python but not storable (outside years 1 to 9999 once in UTC) and list
filters of the wrong type or value are refused at the call site with a ValidationError naming
the argument, before any statement runs: nothing is written, and no driver is left to fail
(or, worse, to accept) in a way of its own. Sync and async twins alike.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, JobStatus, ValidationError
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

# Valid Python datetimes whose UTC instant falls outside years 1 to 9999.
UNSTORABLE = [
    pytest.param(datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5))), id="y10000"),
    pytest.param(datetime(1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))), id="y0"),
    # Rounded up to the ledger's millisecond, the last microsecond is past the range too.
    pytest.param(datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC), id="rounded-up"),
]

# (keyword arguments of jobs(), the argument the error must name)
BAD_FILTERS = [
    pytest.param({"before": "1 OR 1=1"}, "before", id="before-sql"),
    pytest.param({"before": 0}, "before", id="before-zero"),
    pytest.param({"before": -5}, "before", id="before-negative"),
    pytest.param({"before": True}, "before", id="before-bool"),
    pytest.param({"before": 2.0}, "before", id="before-float"),
    # A job_id is a 64-bit integer: past it, a driver would raise an error of its own.
    pytest.param({"before": 2**63}, "before", id="before-past-64-bit"),
    pytest.param({"before": 10**30}, "before", id="before-huge"),
    pytest.param({"name": 123}, "name", id="name-int"),
    pytest.param({"name": "Not A Name"}, "name", id="name-malformed"),
    pytest.param({"include_system": "yes"}, "include_system", id="include-system-str"),
    pytest.param({"include_system": None}, "include_system", id="include-system-none"),
    pytest.param({"all_namespaces": 1}, "all_namespaces", id="all-namespaces-int"),
    pytest.param({"status": 3}, "status", id="status-int"),
    pytest.param({"status": "FAILED"}, "status", id="status-unknown-label"),
    pytest.param({"status": ["failed"]}, "status", id="status-list"),
    pytest.param({"limit": 0}, "limit", id="limit-zero"),
    pytest.param({"limit": "10"}, "limit", id="limit-str"),
    pytest.param({"limit": True}, "limit", id="limit-bool"),
]


def _define(app: Acta) -> None:
    @app.job("filters.ping")
    def ping() -> None:
        pass


# -- not_before ------------------------------------------------------------------------------


@pytest.mark.parametrize("when", UNSTORABLE)
def test_unstorable_not_before_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger, when: datetime
) -> None:
    _define(acta_app)
    before = ledger.snapshot()
    with pytest.raises(ValidationError) as caught:
        acta_app.enqueue("filters.ping", not_before=when)
    assert caught.value.field == "not_before"
    assert "9999" in str(caught.value)  # the message says what is allowed
    assert ledger.snapshot() == before


@pytest.mark.parametrize("when", UNSTORABLE)
async def test_unstorable_not_before_is_refused_async(
    acta_app: Acta, acta_async_host: Any, ledger: Ledger, when: datetime
) -> None:
    _define(acta_app)
    before = ledger.snapshot()
    with pytest.raises(ValidationError) as caught:
        await acta_app.enqueue_async("filters.ping", not_before=when)
    assert caught.value.field == "not_before"
    assert ledger.snapshot() == before


def test_the_latest_storable_instant_is_accepted(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    # The edge itself is storable: the check refuses only what is past it.
    _define(acta_app)
    latest = datetime(9999, 12, 31, 18, 59, 59, 999_000, tzinfo=timezone(timedelta(hours=-5)))
    ref = acta_app.enqueue("filters.ping", not_before=latest)
    assert acta_app.get(ref).next_run_at == latest.astimezone(UTC)
    assert ledger.user_jobs() == 1


def test_the_earliest_storable_instant_is_accepted(acta_app: Acta, acta_host: Host) -> None:
    _define(acta_app)
    earliest = datetime(1, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=1)))
    ref = acta_app.enqueue("filters.ping", not_before=earliest)
    assert acta_app.get(ref).next_run_at == earliest.astimezone(UTC)


# -- list filters -----------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "field"), BAD_FILTERS)
def test_bad_list_filter_is_refused(
    acta_app: Acta, acta_host: Host, kwargs: dict[str, Any], field: str
) -> None:
    _define(acta_app)
    acta_app.enqueue("filters.ping")
    with pytest.raises(ValidationError) as caught:
        acta_app.jobs(**kwargs)
    assert caught.value.field == field, str(caught.value)


@pytest.mark.parametrize(("kwargs", "field"), BAD_FILTERS)
async def test_bad_list_filter_is_refused_async(
    acta_app: Acta, acta_async_host: Any, kwargs: dict[str, Any], field: str
) -> None:
    _define(acta_app)
    await acta_app.enqueue_async("filters.ping")
    with pytest.raises(ValidationError) as caught:
        await acta_app.jobs_async(**kwargs)
    assert caught.value.field == field, str(caught.value)


def test_good_list_filters_still_list(acta_app: Acta, acta_host: Host) -> None:
    _define(acta_app)
    ref = acta_app.enqueue("filters.ping")
    job_id = acta_app.get(ref).job_id
    listed = acta_app.jobs(status="ready", name="filters.ping")
    assert [j.job_ref for j in listed] == [str(ref)]
    assert [j.job_ref for j in acta_app.jobs(status=JobStatus.READY, limit=1)] == [str(ref)]
    assert acta_app.jobs(before=job_id) == []
    assert [j.job_ref for j in acta_app.jobs(before=2**63 - 1)] == [str(ref)]  # the largest id
    everywhere = acta_app.jobs(before=job_id + 1, all_namespaces=True)
    assert [j.job_ref for j in everywhere] == [str(ref)]
