"""A batch that repeats a deduplication key is refused whole, before anything is written.

Deduplication answers a retried enqueue with the job an earlier transaction wrote. Two requests
of one batch sharing a key are something else: the caller asked for two jobs and could get one,
with nothing saying whose input won. acta refuses such a batch with a ``ValidationError`` on
``dedup_key`` that names the key and its positions (issue 8 item 13).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from acta import Acta, JobStatus, ValidationError
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def test_repeated_key_in_a_batch_is_refused_and_nothing_is_written(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("ship-order")
    def ship(order: int) -> int:
        return order

    held = ship.enqueue(1, dedup_key="order-1")
    before = ledger.snapshot()
    with pytest.raises(ValidationError) as caught:
        acta_app.enqueue_batch(
            [
                ship.request(7, dedup_key="order-7"),
                ship.request(8, dedup_key="order-8"),
                ship.request(9),
                ship.request(70, dedup_key="order-7"),
                ship.request(1, dedup_key="order-1"),  # held already: not the reason
            ]
        )
    assert caught.value.field == "dedup_key"
    assert str(caught.value).startswith(
        "dedup_key: 'order-7' appears at positions 0 and 3 of the batch ("
    )
    assert ledger.snapshot() == before

    # Nothing of the batch went in, so each of its keys is still free.
    refs = acta_app.enqueue_batch(
        [ship.request(7, dedup_key="order-7"), ship.request(8, dedup_key="order-8")]
    )
    assert len(set(refs)) == 2 and held not in refs
    assert [acta_app.get(ref).status for ref in refs] == [JobStatus.READY, JobStatus.READY]


def test_every_position_of_the_repeated_key_is_named(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("ship-order")
    def ship(order: int) -> int:
        return order

    before = ledger.snapshot()
    with pytest.raises(ValidationError, match="'twice' appears at positions 1, 2 and 4 of"):
        acta_app.enqueue_batch(
            [
                ship.request(0),
                ship.request(1, dedup_key="twice"),
                ship.request(2, dedup_key="twice"),
                ship.request(3, dedup_key="other"),
                ship.request(4, dedup_key="twice"),
            ]
        )
    with pytest.raises(ValidationError, match="'x' appears at positions 0 and 1 of the batch"):
        acta_app.enqueue_batch([ship.request(0, dedup_key="x"), ship.request(1, dedup_key="x")])
    assert ledger.snapshot() == before


async def test_async_batch_with_a_repeated_key_is_refused_alike(
    acta_app: Acta, acta_async_host: AsyncHost, ledger: Ledger
) -> None:
    @acta_app.job("ship-order")
    async def ship(order: int) -> int:
        return order

    before = ledger.snapshot()
    with pytest.raises(ValidationError) as caught:
        await acta_app.enqueue_batch_async(
            [ship.request(1, dedup_key="same"), ship.request(2, dedup_key="same")]
        )
    assert caught.value.field == "dedup_key"
    assert "'same' appears at positions 0 and 1 of the batch" in str(caught.value)
    assert ledger.snapshot() == before
