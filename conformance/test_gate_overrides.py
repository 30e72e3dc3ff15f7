"""Operator overrides of the gates on a running system: a concurrency limit or a rate changed
with an expected-version check takes effect at the next admission, clearing it restores the
declared one, a stale version is a ConflictError that changes nothing, and every change is a
``gate-changed`` event written with it (issue 9, items 3, 4 and 6).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from acta import Acta, ConflictError, ValidationError
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def changes(ledger: Ledger) -> list[dict[str, object]]:
    """The detail of every gate-changed event, oldest first (they belong to no job)."""
    rows = ledger.rows(
        "SELECT detail, job_ref FROM {schema}.events_view "
        "WHERE event = 'gate-changed' ORDER BY event_id"
    )
    assert all(ref is None for _, ref in rows)
    return [json.loads(detail) for detail, _ in rows]


def test_raising_a_definition_limit_admits_the_next_job_at_once(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("crunch", concurrency_limit=1)
    def crunch(n: int) -> None:
        if n == 1:
            during.append(acta_host.tick(peer))  # one slot, taken by this run
            [gate] = acta_app.gates()
            assert (gate.kind, gate.name, gate.limit, gate.version) == ("job", "crunch", 1, 0)
            version = acta_app.set_concurrency_limit(job="crunch", limit=2, expected_version=0)
            assert version == 1
            acta_host.advance("1s")  # past the bounce
            during.append(acta_host.tick(peer))  # admitted beside this run

    crunch.enqueue(1)
    crunch.enqueue(2)
    assert acta_host.tick() == "completed"
    assert during == ["bounced", "completed"]
    [gate] = acta_app.gates()
    assert (gate.limit, gate.declared_limit, gate.override, gate.version) == (2, 1, 2, 1)
    assert changes(ledger) == [{"gate": "job", "name": "crunch", "limit": 2}]


def test_lowering_a_key_limit_and_clearing_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    peer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("sync-feed", concurrency_limit=3)
    def sync_feed(n: int) -> None:
        if n == 1:
            version = acta_app.set_concurrency_limit(key="acme", limit=1, expected_version=0)
            during.append(acta_host.tick(peer))  # only one slot now, held by this run
            acta_app.set_concurrency_limit(key="acme", limit=None, expected_version=version)
            acta_host.advance("1s")
            during.append(acta_host.tick(peer))  # the declared 3 are back in force

    for n in (1, 2):
        sync_feed.enqueue(n, concurrency_key="acme")
    assert acta_host.tick() == "completed"
    assert during == ["bounced", "completed"]
    [gate] = acta_app.gates()
    assert (gate.limit, gate.override, gate.version) == (3, None, 2)
    assert changes(ledger) == [
        {"gate": "key", "name": "acme", "limit": 1},
        {"gate": "key", "name": "acme", "limit": None},
    ]


def test_a_rate_override_takes_effect_and_clearing_it_restores_the_declared_rate(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("send-sms", rate_limit="10/s")
    def send(n: int) -> None:
        pass

    # Set before the meter is ever used: the override creates it, at version 1.
    assert acta_app.set_rate_limit("send-sms", "2/s", expected_version=0) == 1
    for n in range(5):
        send.enqueue(n)
    assert [acta_host.tick() for _ in range(5)] == ["completed"] * 2 + ["bounced"] * 3
    [meter] = acta_app.meters()
    assert (meter.rate, meter.declared_rate, meter.overridden) == ("2/s", "10/s", True)
    assert ledger.rows("SELECT rate, period_ms FROM {schema}.meters_view") == [(2, 1000)]

    assert acta_app.set_rate_limit("send-sms", None, expected_version=1) == 2
    acta_host.run_until_idle()
    acta_host.advance("10s")  # idle: the declared burst of ten is back
    for n in range(12):
        send.enqueue(n)
    assert [acta_host.tick() for _ in range(12)] == ["completed"] * 10 + ["bounced"] * 2
    [meter] = acta_app.meters()
    assert (meter.rate, meter.overridden, meter.version) == ("10/s", False, 2)
    assert changes(ledger) == [
        {"meter": "send-sms", "rate": "2/s"},
        {"meter": "send-sms", "rate": None},
    ]


def test_a_stale_version_is_a_conflict_and_changes_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    acta_app.define("ship", rate_limit="10/s", rate_key="carrier")
    acta_app.define("call", rate_limit="1/s", rate_key="other")  # a meter nobody used yet
    assert acta_app.set_concurrency_limit(key="acme", limit=2, expected_version=0) == 1
    assert acta_app.set_rate_limit("carrier", "5/s", expected_version=0) == 1
    before = ledger.snapshot()
    with pytest.raises(ConflictError, match="expected version 0, but it is at version 1"):
        acta_app.set_concurrency_limit(key="acme", limit=7, expected_version=0)
    with pytest.raises(ConflictError, match="version 1"):
        acta_app.set_rate_limit("carrier", "9/s", expected_version=0)
    with pytest.raises(ConflictError, match="does not exist yet"):
        acta_app.set_concurrency_limit(key="globex", limit=2, expected_version=3)
    with pytest.raises(ConflictError, match="does not exist yet"):
        acta_app.set_rate_limit("other", "1/s", expected_version=1)
    assert ledger.snapshot() == before
    [gate] = acta_app.gates()
    assert (gate.name, gate.limit, gate.version) == ("acme", 2, 1)
    [meter] = acta_app.meters()
    assert (meter.name, meter.rate, meter.version) == ("carrier", "5/s", 1)
    assert len(changes(ledger)) == 2


def test_clearing_a_gate_nobody_used_writes_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    acta_host.tick()  # the namespace exists (any first use of a ledger writes its row)
    before = ledger.snapshot()
    assert acta_app.set_concurrency_limit(job="crunch", limit=None, expected_version=0) == 0
    assert acta_app.set_rate_limit("carrier", None, expected_version=0) == 0
    assert ledger.snapshot() == before


async def test_the_async_twins_change_and_read_the_same_rows(
    acta_app: Acta, acta_async_host: AsyncHost, ledger: Ledger
) -> None:
    acta_app.define("ship", rate_limit="10/s", rate_key="carrier")
    version = await acta_app.set_concurrency_limit_async(key="acme", limit=4, expected_version=0)
    assert version == 1
    with pytest.raises(ConflictError):
        await acta_app.set_concurrency_limit_async(key="acme", limit=5, expected_version=0)
    assert await acta_app.set_rate_limit_async("carrier", "3/m", expected_version=0) == 1
    [gate] = await acta_app.gates_async()
    [meter] = await acta_app.meters_async()
    assert (gate.name, gate.limit, gate.version) == ("acme", 4, 1)
    assert (meter.name, meter.rate, meter.version) == ("carrier", "3/m", 1)
    assert acta_app.gates() == [gate] and acta_app.meters() == [meter]
    assert len(changes(ledger)) == 2


def test_an_override_no_admission_would_consult_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("plain")
    def plain(n: int) -> None:
        pass

    plain.enqueue(1)  # registered, with no gate of its own
    before = ledger.snapshot()
    with pytest.raises(ValidationError, match="declares no concurrency_limit"):
        acta_app.set_concurrency_limit(job="plain", limit=1, expected_version=0)
    with pytest.raises(ValidationError, match="declares no concurrency_limit"):
        acta_app.set_concurrency_limit(job="nobody", limit=1, expected_version=0)
    with pytest.raises(ValidationError, match="no definition registered here feeds a meter"):
        acta_app.set_rate_limit("plain", "1/h", expected_version=0)
    assert ledger.snapshot() == before
    assert acta_app.gates() == [] and acta_app.meters() == []
