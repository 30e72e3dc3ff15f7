"""Outbox quarantine: rows the relay cannot admit, and the operator's decisions on them.

Each refused row moves to acta_outbox_quarantine in the source with its reason, and a
QUARANTINED event lands on the sys.outbox slot's timeline. Requeue puts the row back under its
id; discard drops its input; both are recorded on the entry and as a QUARANTINE_DECIDED event.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from acta import Acta, EventCode
from acta.errors import ValidationError
from acta.outbox import QuarantineDecidedError, QuarantineEntryNotFoundError
from acta_testing import Host
from conformance.conftest import Ledger
from conformance.outbox_support import Shop

CAP = 64 * 1024
ran: list[object] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


@pytest.fixture
def shop(tmp_path: Path) -> Shop:
    return Shop.create(tmp_path)


@pytest.fixture
def acta_app(shop: Shop) -> Acta:
    app = Acta(outbox=shop.source(poll="1s"), payload_cap=CAP)

    @app.job("ship")
    def ship(order: int) -> None:
        ran.append(order)

    return app


def slot_events(acta_host: Host, ledger: Ledger, code: EventCode) -> list[dict[str, object]]:
    ref = ledger.value("SELECT job_ref FROM {schema}.jobs WHERE dedup_key = 'sys.outbox'")
    return [json.loads(e.detail or "{}") for e in acta_host.events(ref) if e.code is code]


BAD_ROWS = {
    "unknown_job": {"job_name": "not-deployed"},
    "undecodable": {"input": b"{not json"},
    "too_large": {"input": b"1" * (CAP + 1)},
    "bad_namespace": {"namespace": "Not A Namespace"},
    "rejected": {"tags": "this is not json"},
}
ERRORS = {  # the error enqueue raises for the same values (none: only a stored row has it)
    "unknown_job": "UnknownJobError",
    "undecodable": None,
    "too_large": "PayloadTooLargeError",
    "bad_namespace": "InvalidNameError",
    "rejected": "ValidationError",
}


@pytest.mark.parametrize("reason", sorted(BAD_ROWS))
def test_each_reason_moves_the_row_to_quarantine(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger, reason: str
) -> None:
    bad = shop.stage_raw(**BAD_ROWS[reason])
    good = shop.stage(acta_app, "ship", 1)
    acta_host.run_until_idle()
    assert shop.staged() == []
    assert shop.quarantined() == {bad: reason}
    assert ran == [1] and good != bad  # the good row went through in the same cycle
    [entry] = acta_app.outbox_quarantine().entries()
    assert (entry.row, entry.reason, entry.decision) == (bad, reason, None)
    assert entry.quarantined_by == acta_host.worker.identity.incarnation
    events = slot_events(acta_host, ledger, EventCode.QUARANTINED)
    job, error = entry.job_name, ERRORS[reason]
    assert events == [
        {"source": "default", "row": bad, "job": job, "reason": reason, "error": error}
    ]
    assert ledger.user_jobs() == 1  # nothing of the bad row reached the ledger


def test_rows_of_another_valid_namespace_are_left_for_their_relay(
    acta_app: Acta, acta_host: Host, shop: Shop
) -> None:
    theirs = shop.stage_raw(namespace="billing")
    acta_host.run_until_idle()
    assert shop.staged() == [theirs] and shop.quarantined() == {}


def test_requeue_puts_the_row_back_under_its_id(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    row = shop.stage_raw(job_name="late", input=b"5")
    acta_host.run_until_idle()
    assert shop.quarantined() == {row: "unknown_job"}

    @acta_app.job("late")  # the missing job is deployed
    def late(n: int) -> None:
        ran.append(("late", n))

    desk = acta_app.outbox_quarantine()
    entry = desk.requeue(row, actor="ops@shop", reason="deployed the late job")
    assert (entry.decision, entry.actor, entry.decision_reason) == (
        "requeue",
        "ops@shop",
        "deployed the late job",
    )
    assert entry.decided_at is not None
    assert shop.staged() == [row] and shop.quarantined() == {}
    acta_host.advance("1s")
    acta_host.run_until_idle()
    assert ran == [("late", 5)] and shop.staged() == []
    assert (
        ledger.value(
            "SELECT count(*) FROM {schema}.jobs WHERE dedup_key = :key",
            {"key": f"outbox:default:{row}"},
        )
        == 1
    )
    decided = slot_events(acta_host, ledger, EventCode.QUARANTINE_DECIDED)
    assert decided == [{"source": "default", "row": row, "decision": "requeue"}]
    # The decided entry stays readable, with the decision, among all entries.
    assert [e.decision for e in desk.entries(everything=True)] == ["requeue"]
    assert desk.entries() == []


def test_discard_drops_the_input_and_keeps_the_decision(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    row = shop.stage_raw(job_name="ghost")
    acta_host.run_until_idle()
    desk = acta_app.outbox_quarantine()
    assert desk.show(row).input == b"1"
    entry = desk.discard(row, actor="ops")
    assert (entry.decision, entry.actor, entry.input) == ("discard", "ops", None)
    assert shop.staged() == []
    assert slot_events(acta_host, ledger, EventCode.QUARANTINE_DECIDED) == [
        {"source": "default", "row": row, "decision": "discard"}
    ]
    with pytest.raises(QuarantineDecidedError, match="already decided"):
        desk.requeue(row, actor="ops")
    assert shop.staged() == []


def test_bad_decisions_are_refused_and_write_nothing(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    row = shop.stage_raw(job_name="ghost")
    acta_host.run_until_idle()
    desk = acta_app.outbox_quarantine()
    before = ledger.snapshot()
    with pytest.raises(QuarantineEntryNotFoundError, match="not in quarantine"):
        desk.discard(row + 100, actor="ops")
    with pytest.raises(ValidationError, match="actor"):
        desk.discard(row, actor="")
    assert ledger.snapshot() == before
    assert desk.show(row).decision is None


def test_async_verbs(acta_app: Acta, acta_host: Host, shop: Shop) -> None:
    row = shop.stage_raw(job_name="ghost")
    acta_host.run_until_idle()
    desk = acta_app.outbox_quarantine()

    async def decide() -> str | None:
        [entry] = await desk.entries_async()
        assert entry.row == row
        assert (await desk.show_async(entry.row)).reason == "unknown_job"
        done = await desk.discard_async(entry.row, actor="bot")
        return done.decision

    assert asyncio.run(decide()) == "discard"
    assert desk.entries() == []


def test_rows_of_a_retired_job_are_quarantined_and_the_rest_delivered(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    @acta_app.job("legacy")
    def legacy(order: int) -> None:
        ran.append(("legacy", order))

    legacy.enqueue(0)
    acta_host.run_until_idle()
    acta_app.repairs.retire_definition("legacy", reason="replaced by ship")
    ran.clear()
    old = shop.stage(acta_app, "legacy", 1)
    good = shop.stage(acta_app, "ship", 2)
    acta_host.advance("2s")  # the relay's next poll
    acta_host.run_until_idle()
    assert shop.staged() == [] and shop.quarantined() == {old: "rejected"}
    assert ran == [2] and good != old  # the retired job did not hold up the batch
    [entry] = acta_app.outbox_quarantine().entries()
    assert entry.row == old and "retired" in entry.message
