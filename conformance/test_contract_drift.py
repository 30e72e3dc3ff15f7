"""The contract-drift guard (issue 12): the first worker to register a job records the shape
of its input and result; a later build whose shape differs is warned (its shape recorded, a
contract-changed event saying what changed) or refused (it does not start, nothing written),
by the application's policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from acta import Acta, ConfigurationError
from acta.errors import ContractDriftError
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


@dataclass
class OrderV1:
    order_id: int
    email: str


@dataclass
class OrderV2:
    order_id: str  # was an int
    email: str
    locale: str  # new and required


@dataclass
class Renamed:  # the same stored shape as OrderV1 under another class name
    order_id: int
    email: str


def _build(input_type: type, policy: str = "warn") -> Acta:
    """Another build of the application: it declares ``send-receipt`` with ``input_type``."""
    app = Acta(contract_drift=policy)

    def send_receipt(order: input_type) -> None:  # type: ignore[valid-type]
        ...

    send_receipt.__annotations__["order"] = input_type
    app.job("send-receipt")(send_receipt)
    return app


def _deploy(build: Acta, host: Host) -> Host:
    """Start a worker of ``build`` on the same ledger and clock as ``host``'s."""
    other = Host(build, host.provider, host.clock)
    other.advance(0)  # registers it
    return other


def recorded(ledger: Ledger) -> list[tuple[str, str]]:
    rows = ledger.rows(
        "SELECT d.name, c.fingerprint FROM {schema}.contracts c "
        "JOIN {schema}.definitions d ON d.id = c.definition_id ORDER BY d.name"
    )
    return [(r[0], r[1]) for r in rows]


def events(ledger: Ledger) -> list[str]:
    rows = ledger.rows(
        "SELECT message FROM {schema}.events_view WHERE event = 'contract-changed' "
        "ORDER BY event_id"
    )
    return [r[0] for r in rows]


@pytest.fixture
def first(acta_app: Acta, acta_host: Host, ledger: Ledger) -> Acta:
    @acta_app.job("send-receipt")
    def send_receipt(order: OrderV1) -> None: ...

    acta_host.add_worker()
    acta_host.advance(0)  # registers: the first contract is recorded
    assert [name for name, _ in recorded(ledger)] == ["send-receipt"]
    return acta_app


def test_the_same_shape_under_another_class_name_is_no_drift(
    first: Acta, acta_host: Host, ledger: Ledger
) -> None:
    before = recorded(ledger)
    _deploy(_build(Renamed), acta_host).close()
    assert recorded(ledger) == before
    assert events(ledger) == []


def test_warn_records_the_new_shape_and_says_what_changed(
    first: Acta, acta_host: Host, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    before = recorded(ledger)
    _deploy(_build(OrderV2), acta_host).close()
    assert recorded(ledger) != before
    assert events(ledger) == [
        'send-receipt: input.locale: added (required); input.order_id: "int" -> "str"'
    ]
    assert "contract drift: job 'send-receipt'" in caplog.text


def test_refuse_stops_the_worker_and_writes_nothing(
    first: Acta, acta_host: Host, ledger: Ledger
) -> None:
    before = recorded(ledger)
    workers = ledger.value("SELECT count(*) FROM {schema}.workers")
    other = Host(_build(OrderV2, "refuse"), acta_host.provider, acta_host.clock)
    try:
        with pytest.raises(ContractDriftError, match=r"input\.order_id"):
            other.advance(0)
        assert not other.worker.registered
    finally:
        other.close()
    assert recorded(ledger) == before
    assert ledger.value("SELECT count(*) FROM {schema}.workers") == workers
    assert events(ledger) == []


def test_a_bad_policy_is_refused_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="contract_drift"):
        Acta(contract_drift="maybe")
