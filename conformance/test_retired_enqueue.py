"""A retired definition takes no new jobs: an enqueue naming it is refused at commit with a
typed error, alone, in a batch (refused whole) and inside the caller's transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from acta import Acta
from acta.errors import DefinitionRetiredError, EnqueueRefusedError
from acta.provider.protocol import Provider
from acta_testing import Host
from conformance.tenant_support import caller_transaction

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def _declare(app: Acta) -> None:
    @app.job("legacy")
    def legacy(n: int) -> int:
        return n

    @app.job("current")
    def current(n: int) -> int:
        return n


def test_a_retired_definition_refuses_a_single_enqueue(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    _declare(acta_app)
    acta_app.enqueue("legacy", 1)
    acta_app.repairs.retire_definition("legacy", reason="replaced")
    before = ledger.snapshot()
    with pytest.raises(DefinitionRetiredError, match="legacy") as caught:
        acta_app.enqueue("legacy", 2)
    assert isinstance(caught.value, EnqueueRefusedError) and caught.value.job_name == "legacy"
    with pytest.raises(DefinitionRetiredError):
        acta_app.enqueue("legacy", 3, dedup_key="once")  # a key changes nothing
    assert ledger.snapshot() == before


@pytest.mark.parametrize("lane", [None, "l1"])
def test_a_batch_holding_a_retired_job_is_refused_whole(
    acta_app: Acta, acta_host: Host, ledger: Ledger, lane: str | None
) -> None:
    _declare(acta_app)
    acta_app.enqueue_batch([acta_app.request("legacy", 0), acta_app.request("current", 0)])
    acta_app.repairs.retire_definition("legacy")
    before = ledger.snapshot()
    batch = [
        acta_app.request("current", 1, lane=lane),
        acta_app.request("current", 2),
        acta_app.request("legacy", 3),
    ]
    with pytest.raises(DefinitionRetiredError):
        acta_app.enqueue_batch(batch)
    assert ledger.snapshot() == before


def test_a_retired_job_is_refused_inside_the_callers_transaction(
    acta_app: Acta, acta_host: Host, acta_provider: Provider, ledger: Ledger
) -> None:
    _declare(acta_app)
    acta_app.enqueue_batch([acta_app.request("legacy", 0), acta_app.request("current", 0)])
    acta_app.repairs.retire_definition("legacy")
    before = ledger.snapshot()
    with caller_transaction(acta_provider) as conn:
        with pytest.raises(DefinitionRetiredError):
            acta_app.enqueue_batch(
                [acta_app.request("current", 1), acta_app.request("legacy", 2)], connection=conn
            )
        with pytest.raises(DefinitionRetiredError):
            acta_app.enqueue("legacy", 3, connection=conn)
    assert ledger.snapshot() == before
