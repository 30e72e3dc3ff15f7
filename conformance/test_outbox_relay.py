"""The outbox relay (sys.outbox): staged rows become ledger jobs once, and only committed ones.

The source is a SQLite file of the test's own (conformance/outbox_support.py); the ledger is
the chosen provider. Time is the test host's clock: the relay's slot comes due at registration
and again one poll after each run.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, EventCode, JobStatus
from acta.clock import ManualClock
from acta.runtime import relay as relay_module
from acta.runtime.worker import Worker
from acta_testing import Host
from conformance.conftest import Ledger
from conformance.outbox_support import Shop


@pytest.fixture
def shop(tmp_path: Path) -> Shop:
    return Shop.create(tmp_path)


@pytest.fixture
def hold() -> str:
    return "30s"


@pytest.fixture
def acta_app(shop: Shop, hold: str) -> Acta:
    app = Acta(outbox=shop.source(poll="2s", hold=hold))

    @app.job("ship")
    def ship(order: int) -> str:
        shipped.append(order)
        return f"shipped {order}"

    return app


shipped: list[int] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    shipped.clear()


def slot_ref(ledger: Ledger) -> str:
    return str(ledger.value("SELECT job_ref FROM {schema}.jobs WHERE dedup_key = 'sys.outbox'"))


def job_keys(ledger: Ledger) -> list[str]:
    found = ledger.rows(
        "SELECT j.dedup_key FROM {schema}.jobs j JOIN {schema}.definitions d "
        "ON d.id = j.definition_id WHERE d.name = 'ship' ORDER BY j.id"
    )
    return [row[0] for row in found]


def test_staged_rows_are_delivered_then_deleted(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    first = shop.stage(acta_app, "ship", 1)
    second = shop.stage(acta_app, "ship", 2, dedup_key="order-2", tags=["eu"])
    assert ledger.user_jobs() == 0  # staging never touches the ledger

    assert acta_host.tick() == "completed"  # the relay ran first, then one delivered job
    assert shop.staged() == []
    assert job_keys(ledger) == [f"outbox:default:{first}", "order-2"]
    assert acta_host.tick() == "completed"
    assert sorted(shipped) == [1, 2]

    [job] = [j for j in acta_app.jobs() if j.dedup_key == "order-2"]
    assert job.status is JobStatus.SUCCEEDED and job.tags == ("eu",)
    events = acta_host.events(job.job_ref)
    delivered = [e for e in events if e.code is EventCode.DELIVERED]
    assert len(delivered) == 1 and f"outbox row {second} " in (delivered[0].message or "")
    # Delivery did not wait for the handler: the relay's slot settled before the job ran.
    slot = acta_host.job(slot_ref(ledger))
    assert slot.status is JobStatus.READY


def test_rolled_back_staging_is_never_delivered(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    conn = shop.connect()
    acta_app.add_to_outbox("ship", 7, connection=conn)
    conn.rollback()
    conn.close()
    kept = shop.stage(acta_app, "ship", 8)

    acta_host.run_until_idle()
    assert shipped == [8]
    assert job_keys(ledger) == [f"outbox:default:{kept}"]


def test_the_relay_polls_again_after_its_interval(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    acta_host.tick()  # the relay's first run finds nothing
    shop.stage(acta_app, "ship", 3)
    assert acta_host.tick() == "nothing-claimed"  # not due again yet
    assert shop.staged() != []
    acta_host.advance("2s")
    assert acta_host.tick() == "completed"
    assert shipped == [3] and shop.staged() == []


def test_a_crash_between_ledger_and_source_redelivers_for_free(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger, monkeypatch: Any
) -> None:
    rows = [shop.stage(acta_app, "ship", n) for n in (1, 2, 3)]
    first = acta_host.worker
    peer = acta_host.add_worker()

    def die(*args: Any) -> None:
        acta_host.kill(first)  # the process dies after the ledger committed, before the delete
        raise ConnectionError("the process died")

    monkeypatch.setattr(relay_module, "settle", die)
    acta_host.tick(first)  # the relay's run dies with the process; no user job ran
    assert len(job_keys(ledger)) == 3  # the jobs are in the ledger...
    assert shop.staged() == rows  # ...and the rows still in the outbox, held by the dead one
    monkeypatch.undo()

    # The peer cannot take the rows while the dead relay's hold lasts; once its lease and the
    # hold (30 s) have lapsed, recovery frees the slot and the peer delivers them again.
    acta_host.advance(first.lease + peer.heartbeat)
    acta_host.advance("31s")
    acta_host.run_until_idle(peer)
    assert shop.staged() == []
    assert job_keys(ledger) == [f"outbox:default:{row}" for row in rows]  # one job per row
    assert sorted(shipped) == [1, 2, 3]
    for job in acta_app.jobs():
        if job.name == "ship":
            codes = [e.code for e in acta_host.events(job.job_ref)]
            assert codes.count(EventCode.DELIVERED) == 1


def test_a_worker_without_a_source_never_runs_the_relay(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    host = acta_host._host
    bare = Worker(dataclasses.replace(host.deployment, outbox=None), clock=acta_host.clock)
    host.workers.append(bare)  # closed with the host
    acta_host.tick()  # the sourced worker registers, puts the slot in place and runs it once
    acta_host.advance("2s")
    shop.stage(acta_app, "ship", 5)
    # The slot is due, but a worker without a source hands it back and skips it from then on.
    assert acta_host.tick(bare) == "nothing-claimed"
    assert bare.env.skipped  # the relay's definition, never claimed by it again
    assert shop.staged() != [] and ledger.user_jobs() == 0
    assert acta_host.tick(bare) == "nothing-claimed"
    assert shop.staged() != []
    assert acta_host.tick() == "completed"  # a worker with the source delivers it
    assert shipped == [5]


def test_an_app_without_a_source_has_no_relay_slot(
    ledger: Ledger, acta_provider: Any, acta_clock: ManualClock
) -> None:
    app = Acta()
    host = Host(app, acta_provider, acta_clock)
    try:
        assert host.tick() == "nothing-claimed"
        assert (
            ledger.value("SELECT count(*) FROM {schema}.jobs WHERE dedup_key = 'sys.outbox'") == 0
        )
    finally:
        host.close()


@pytest.mark.parametrize("hold", ["5m"])  # longer than the lease: the rows stay held
def test_a_relay_that_lost_its_slot_delivers_nothing(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger, monkeypatch: Any
) -> None:
    row = shop.stage(acta_app, "ship", 9)
    zombie = acta_host.worker
    peer = acta_host.add_worker()
    real_claim = relay_module.claim
    peer_saw: list[str] = []

    def claim_then_stall(*args: Any) -> Any:
        taken = real_claim(*args)
        monkeypatch.setattr(relay_module, "claim", real_claim)
        acta_host.pause(zombie)  # SIGSTOP after the claim: its slot lease lapses meanwhile
        acta_host.advance(zombie.lease + peer.heartbeat)
        peer_saw.append(acta_host.tick(peer))  # recovery, then the peer runs the relay slot
        acta_host.resume(zombie)
        return taken

    monkeypatch.setattr(relay_module, "claim", claim_then_stall)
    acta_host.tick(zombie)
    # The peer's relay found the row held; the zombie's delivery was fenced and gave it back.
    assert peer_saw == ["nothing-claimed"]
    assert job_keys(ledger) == []
    assert shop.rows("SELECT id, claimed_by, attempts FROM acta_outbox") == [(row, None, 1)]
    acta_host.advance("2s")
    acta_host.run_until_idle(peer)
    assert job_keys(ledger) == [f"outbox:default:{row}"] and shipped == [9]
