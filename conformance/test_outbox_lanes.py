"""Outbox ordering: rows naming a lane reach the ledger in staging order.

A laned row waits while an older row of its namespace and lane remains in the outbox, held by
anyone; a delivery that fails keeps its rows first in line; quarantine releases the line.
Once delivered, the ledger's lane orders execution.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acta import Acta
from acta_testing import Host
from conformance.conftest import Ledger
from conformance.outbox_support import Shop

ran: list[str] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


@pytest.fixture
def shop(tmp_path: Path) -> Shop:
    return Shop.create(tmp_path)


@pytest.fixture
def batch() -> int:
    return 100


@pytest.fixture
def acta_app(shop: Shop, batch: int) -> Acta:
    app = Acta(outbox=shop.source(poll="1s", batch=batch))

    @app.job("post")
    def post(entry: str) -> None:
        ran.append(entry)

    return app


def delivered(ledger: Ledger) -> list[str]:
    """Deduplication keys of delivered jobs, in the order they were written."""
    found = ledger.rows(
        "SELECT j.dedup_key FROM {schema}.jobs j JOIN {schema}.definitions d "
        "ON d.id = j.definition_id WHERE d.name = 'post' ORDER BY j.id"
    )
    return [row[0] for row in found]


@pytest.mark.parametrize("batch", [1, 2, 100])
def test_lane_rows_run_in_staging_order(
    acta_app: Acta, acta_host: Host, shop: Shop, batch: int
) -> None:
    for n in range(6):
        lane = "acct-1" if n % 3 else "acct-2"
        shop.stage(acta_app, "post", f"{lane}/{n}", lane=lane)
    while shop.staged():
        acta_host.run_until_idle()
        acta_host.advance("1s")
    acta_host.run_until_idle()
    assert [e for e in ran if e.startswith("acct-1")] == [
        "acct-1/1",
        "acct-1/2",
        "acct-1/4",
        "acct-1/5",
    ]
    assert [e for e in ran if e.startswith("acct-2")] == ["acct-2/0", "acct-2/3"]


def test_a_row_waits_while_an_older_row_of_its_lane_is_held(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    held = shop.stage(acta_app, "post", "a", lane="acct")
    behind = shop.stage(acta_app, "post", "b", lane="acct")
    free = shop.stage(acta_app, "post", "c")
    # Another relay holds the oldest row of the lane for the next 30 seconds.
    with shop.connect() as conn:
        conn.execute(
            "UPDATE acta_outbox SET claimed_by = 'elsewhere', "
            "claimed_until = '2026-01-01 00:00:30.000' WHERE id = ?",
            (held,),
        )
    acta_host.run_until_idle()
    assert shop.staged() == [held, behind]  # the unlaned row went; the lane waits
    assert ran == ["c"]
    acta_host.advance("31s")  # the hold lapsed (its relay died): the lane moves, in order
    acta_host.run_until_idle()
    assert shop.staged() == []
    assert ran == ["c", "a", "b"]
    assert delivered(ledger) == [f"outbox:default:{k}" for k in (free, held, behind)]


@pytest.mark.parametrize("batch", [1])
def test_a_failed_delivery_holds_the_line(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    first = shop.stage(acta_app, "post", "first", lane="acct")
    second = shop.stage(acta_app, "post", "second", lane="acct")
    undo_from = len(ledger._undo)
    ledger.refuse_inserts("jobs", f"NEW.dedup_key = 'outbox:default:{first}'", "ledger says no")
    for _ in range(3):
        acta_host.run_until_idle()
        acta_host.advance("1s")
    # Each try failed and gave the row back; the row behind it never went ahead.
    assert shop.staged() == [first, second]
    [(attempts, error, holder)] = shop.rows(
        "SELECT attempts, last_error, claimed_by FROM acta_outbox WHERE id = ?", (first,)
    )
    assert attempts == 3 and "ledger says no" in error and holder is None
    assert delivered(ledger) == [] and ran == []

    for statement in reversed(ledger._undo[undo_from:]):
        ledger.execute(statement)  # the ledger accepts it again
    del ledger._undo[undo_from:]
    while shop.staged():
        acta_host.run_until_idle()
        acta_host.advance("1s")
    acta_host.run_until_idle()
    assert ran == ["first", "second"]
    assert delivered(ledger) == [f"outbox:default:{first}", f"outbox:default:{second}"]


def test_quarantine_releases_the_line(
    acta_app: Acta, acta_host: Host, shop: Shop, ledger: Ledger
) -> None:
    stuck = shop.stage_raw(job_name="not-deployed", lane="acct")
    after = shop.stage(acta_app, "post", "after", lane="acct")
    acta_host.run_until_idle()
    assert shop.quarantined() == {stuck: "unknown_job"}
    assert shop.staged() == []
    assert ran == ["after"]
    assert delivered(ledger) == [f"outbox:default:{after}"]
