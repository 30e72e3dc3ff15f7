"""Outbox admission: what the relay makes of rows it cannot read, or that enqueue would refuse.

The source table belongs to the application, and SQLite stores any value in any column: a
timestamp column may hold text that is no timestamp, a priority column a word. Such a row is
quarantined alone (the others of its batch are delivered, in lane order), and a row the
enqueue API would refuse is quarantined with the error enqueue gives for the same values: the
relay admits a row through enqueue's own validation.
"""

from __future__ import annotations

import json
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, EventCode
from acta.clock import ManualClock
from acta.errors import ActaError, PayloadTooLargeError, UnknownJobError
from acta_testing import Host
from conformance.conftest import Ledger
from conformance.outbox_support import Shop

CAP = 1024
ran: list[str] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


@pytest.fixture
def shop(tmp_path: Path) -> Shop:
    return Shop.create(tmp_path)


@pytest.fixture
def acta_app(shop: Shop) -> Acta:
    app = Acta(outbox=shop.source(poll="1s"), payload_cap=CAP)

    @app.job("post")
    def post(entry: str) -> None:
        ran.append(entry)

    @app.job("billed", tenant="required")
    def billed(entry: str) -> None:
        ran.append(entry)

    return app


def slot_events(acta_host: Host, ledger: Ledger) -> dict[int, dict[str, Any]]:
    """The QUARANTINED events' details on the relay slot, by outbox row."""
    ref = ledger.value("SELECT job_ref FROM {schema}.jobs WHERE dedup_key = 'sys.outbox'")
    found = [json.loads(e.detail or "{}") for e in acta_host.events(ref)]
    codes = [e.code for e in acta_host.events(ref)]
    return {d["row"]: d for d, c in zip(found, codes, strict=True) if c is EventCode.QUARANTINED}


# -- rows the relay cannot read -----------------------------------------------------------

UNREADABLE = {
    "run_at text": ("run_at", {"run_at": "garbage"}),
    "run_at number": ("run_at", {"run_at": 12345}),
    "deadline_at": ("deadline_at", {"deadline_at": "31/12/2026"}),
    "staged_at": ("staged_at", {"staged_at": "yesterday"}),
    "before year 1": ("run_at", {"run_at": "0001-01-01T00:00:00+14:00"}),
    "input_codec": ("input_codec", {"input_codec": "json"}),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_an_unreadable_field_quarantines_its_row_alone(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger, case: str
) -> None:
    column, values = UNREADABLE[case]
    before = shop.stage(acta_app, "post", "before", lane="acct")
    bad = shop.stage_raw(job_name="post", input=b'"bad"', lane="acct", **values)
    after = shop.stage(acta_app, "post", "after", lane="acct")
    other = shop.stage(acta_app, "post", "other")

    acta_host.run_until_idle()

    assert [r for r in ran if r != "other"] == ["before", "after"] and "other" in ran
    assert shop.staged() == [] and shop.quarantined() == {bad: "undecodable"}
    assert {before, after, other}.isdisjoint({bad})
    [entry] = acta_app.outbox_quarantine().entries()  # readable despite what it holds
    assert entry.row == bad and entry.message.startswith(f"{column}: ")
    assert slot_events(acta_host, ledger)[bad]["reason"] == "undecodable"
    assert ledger.user_jobs() == 3
    if column == "staged_at":
        assert entry.staged_at is None  # no instant to show; the raw text stays in the table


def test_an_instant_written_with_an_offset_keeps_it(
    acta_app: Acta, acta_host: Host, shop: Shop, acta_clock: ManualClock
) -> None:
    # Two hours ahead of UTC: the instant is the test clock's own, so the job is due now.
    local = acta_clock.now().astimezone(timezone(timedelta(hours=2)))
    shop.stage_raw(job_name="post", input=b'"due"', run_at=local.isoformat())
    assert acta_host.tick() == "completed"  # the relay, then the delivered job, due at once
    assert ran == ["due"] and shop.quarantined() == {}
    [job] = acta_app.jobs(name="post")
    assert job.next_run_at == acta_clock.now()


# -- rows enqueue would refuse ------------------------------------------------------------

# Each case: the raw row's columns, and the enqueue call that names the same values.
REFUSED: dict[str, tuple[dict[str, Any], tuple[Any, ...], dict[str, Any]]] = {
    "priority 999": ({"priority": 999}, ("post", "x"), {"priority": 999}),
    "priority -5000": ({"priority": -5000}, ("post", "x"), {"priority": -5000}),
    "priority word": ({"priority": "high"}, ("post", "x"), {"priority": "high"}),
    "priority real": ({"priority": 1.5}, ("post", "x"), {"priority": 1.5}),
    "unknown job": ({"job_name": "ghost"}, ("ghost", "x"), {}),
    "job name blob": ({"job_name": b"post"}, (b"post", "x"), {}),
    "system job": ({"job_name": "sys.outbox"}, ("sys.outbox", "x"), {}),
    "tenant required": ({"job_name": "billed"}, ("billed", "x"), {}),
    "empty lane": ({"lane": ""}, ("post", "x"), {"lane": ""}),
    "long lane": ({"lane": "l" * 1000}, ("post", "x"), {"lane": "l" * 1000}),
    "dedup key": ({"dedup_key": " padded"}, ("post", "x"), {"dedup_key": " padded"}),
    "correlation": ({"correlation_key": "a\nb"}, ("post", "x"), {"correlation_key": "a\nb"}),
    "concurrency": ({"concurrency_key": ""}, ("post", "x"), {"concurrency_key": ""}),
    "empty tag": ({"tags": '["ok", ""]'}, ("post", "x"), {"tags": ["ok", ""]}),
    "number tag": ({"tags": "[7]"}, ("post", "x"), {"tags": [7]}),
    # Codec 2 (text), the one "post" encodes its str input with: the same bytes either way.
    "too large": ({"input_codec": 2, "input": b"x" * (CAP + 1)}, ("post", "x" * (CAP + 1)), {}),
}
REASON = {UnknownJobError: "unknown_job", PayloadTooLargeError: "too_large"}


def enqueue_error(app: Acta, args: tuple[Any, ...], options: dict[str, Any]) -> ActaError:
    with pytest.raises(ActaError) as caught:
        app.enqueue(*args, **options)
    return caught.value


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_row_enqueue_refuses_is_quarantined_with_enqueues_reason(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger, case: str
) -> None:
    values, args, options = REFUSED[case]
    error = enqueue_error(acta_app, args, options)
    reason = REASON.get(type(error), "rejected")
    good = shop.stage(acta_app, "post", "good")
    bad = shop.stage_raw(**{"input": b'"x"', "job_name": "post", **values})

    acta_host.run_until_idle()

    assert ran == ["good"] and good != bad
    assert shop.staged() == [] and shop.quarantined() == {bad: reason}
    [entry] = acta_app.outbox_quarantine().entries()
    assert entry.message == f"{type(error).__name__}: {error}"
    event = slot_events(acta_host, ledger)[bad]
    assert (event["reason"], event["error"]) == (reason, type(error).__name__)
    assert ledger.user_jobs() == 1  # the bad row wrote no job, whatever its priority


def test_bad_rows_among_good_ones_leave_the_good_ones_in_lane_order(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    bad: dict[int, str] = {}
    for n in range(3):
        shop.stage(acta_app, "post", f"a{n}", lane="acct")
        bad[shop.stage_raw(input=b'"x"', job_name="post", lane="acct", priority=999)] = "rejected"
        bad[shop.stage_raw(input=b'"x"', job_name="post", lane="acct", run_at="soon")] = (
            "undecodable"
        )
        bad[shop.stage_raw(input=b'"x"', job_name="nope", lane="acct")] = "unknown_job"
    shop.stage(acta_app, "post", "a-last", lane="acct")
    shop.stage(acta_app, "post", "free", priority=5)

    acta_host.run_until_idle()

    assert [r for r in ran if r != "free"] == ["a0", "a1", "a2", "a-last"] and "free" in ran
    assert shop.staged() == [] and shop.quarantined() == bad
    assert {row: e["reason"] for row, e in slot_events(acta_host, ledger).items()} == bad
    assert ledger.user_jobs() == 5
    assert sorted(job.priority for job in acta_app.jobs(name="post")) == [0, 0, 0, 0, 5]
