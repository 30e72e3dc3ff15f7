"""Smoke: lanes, keys, limits and rates end to end (to be replaced by the full specs)."""

from __future__ import annotations

from acta import Acta
from acta_testing import Host


def test_lane_order_beats_priority(acta_app: Acta, acta_host: Host) -> None:
    seen: list[str] = []

    @acta_app.job("step")
    def step(name: str) -> None:
        seen.append(name)

    step.enqueue("a1", lane="cust-a")
    step.enqueue("a2", lane="cust-a", priority=50)
    step.enqueue("b1", lane="cust-b")
    step.enqueue("free")
    acta_host.run_until_idle()
    assert seen.index("a1") < seen.index("a2")
    assert sorted(seen) == ["a1", "a2", "b1", "free"]


def test_key_bounces(acta_app: Acta, acta_host: Host) -> None:
    peer = acta_host.add_worker()
    outcomes: list[str] = []

    @acta_app.job("rebuild")
    def rebuild(n: int) -> None:
        if n == 1:
            outcomes.append(acta_host.tick(peer))

    rebuild.enqueue(1, concurrency_key="acme")
    rebuild.enqueue(2, concurrency_key="acme")
    assert acta_host.tick() == "completed"
    assert outcomes == ["bounced"]
    acta_host.run_until_idle()


def test_rate(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("send", rate_limit="2/s")
    def send(n: int) -> None:
        pass

    for i in range(5):
        send.enqueue(i)
    results = [acta_host.tick() for _ in range(4)]
    assert results == ["completed", "completed", "bounced", "bounced"]
    acta_host.run_until_idle()


def test_override(acta_app: Acta, acta_host: Host) -> None:
    v = acta_app.set_concurrency_limit(key="acme", limit=2, expected_version=0)
    assert v == 1
    (g,) = acta_app.gates()
    assert (g.name, g.limit, g.version) == ("acme", 2, 1)
    v = acta_app.set_rate_limit("mailer", "5/s", expected_version=0)
    (m,) = acta_app.meters()
    assert (m.rate, m.version) == ("5/s", 1)
