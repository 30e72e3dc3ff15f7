"""The invariant checks of anvil/checks, on SQLite and PostgreSQL: each one can fail.

A check that never returns a row proves nothing, so every check is shown both ways here: a
real workload run through the test host (lanes with a retry and a lost lease, a key, a
definition limit with an operator override, a meter) leaves a ledger on which all of them
return nothing; then events and rows written directly, the way a broken core would write them,
make each check return exactly the violation planted. Rows are written and read through a
connection of the test's own, never through acta.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from acta import Acta, EventCode, JobContext
from acta.errors import ValidationError
from acta.provider.protocol import Provider
from acta_testing import Host
from acta_testing.schemas import ledger_location
from anvil.checks import CHECKS, Row, describe
from anvil.checks.plant import Planter

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # synthetic events, far from the host's clock


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    """Each test here runs on both dialects, whatever ``--acta-provider`` says."""
    return either_dialect


@pytest.fixture
def direct(acta_provider: Provider) -> Iterator[Planter]:
    """The test's own connection to the ledger: plants rows, runs the checks."""
    found = Planter(ledger_location(acta_provider), BASE)
    yield found
    found.close()


def _problems(rows: list[Row]) -> list[tuple[str, str | None, str]]:
    return [(r["problem"], r["earlier_ref"], r["later_ref"]) for r in rows]


# -- a clean run ------------------------------------------------------------------------------


def test_a_clean_run_passes_every_check(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    zombie = acta_host.worker
    peer = acta_host.add_worker()
    third = acta_host.add_worker()
    tried: set[str] = set()
    outcomes: list[str] = []

    @acta_app.job("step")
    def step(name: str, ctx: JobContext) -> None:
        if name == "a1" and name not in tried:
            tried.add(name)
            raise RuntimeError("first attempt fails: the head keeps its place")
        if name == "b1" and ctx.execution == 1:
            # SIGSTOP mid-run: the lease lapses, a peer recovers b1, runs it, and b2 behind it
            # starts while this handler is still going. The ledger records the lease loss, so
            # its lane intervals do not overlap.
            acta_host.pause(zombie)
            acta_host.advance(zombie.lease + peer.heartbeat)
            outcomes.extend([acta_host.tick(peer), acta_host.tick(peer)])
            acta_host.resume(zombie)

    @acta_app.job("rebuild")
    def rebuild(n: int) -> None:
        if n == 1:
            outcomes.append(acta_host.tick(peer))  # one slot (the override makes it two)

    @acta_app.job("resize", concurrency_limit=2)
    def resize(n: int) -> None:
        if n < 3:
            outcomes.append(acta_host.tick(peer if n == 1 else third))

    @acta_app.job("send", rate_limit="2/s")
    def send(n: int) -> None:
        pass

    for name in ("b1", "b2", "b3"):
        step.enqueue(name, lane="lane-b")
    assert acta_host.tick(zombie) == "lease-lost"
    for name in ("a1", "a2", "a3"):
        step.enqueue(name, lane="lane-a")
    rebuild.enqueue(1, concurrency_key="acme")
    rebuild.enqueue(2, concurrency_key="acme")
    for n in range(1, 5):
        resize.enqueue(n)
    for n in range(6):
        send.enqueue(n)
    acta_host.run_until_idle(peer)
    # A second round on the key after an operator raised its limit to two.
    acta_app.set_concurrency_limit(key="acme", limit=2, expected_version=0)
    rebuild.enqueue(1, concurrency_key="acme")
    rebuild.enqueue(2, concurrency_key="acme")
    acta_host.run_until_idle(peer)

    assert outcomes[:2] == ["completed", "completed"]  # b1 recovered, then b2, mid-b1
    assert "bounced" in outcomes and outcomes[-1] == "completed"  # the raised limit let 2 run
    assert all(job.status.label == "succeeded" for job in acta_app.jobs())
    for name in CHECKS:
        found = direct.check(name)
        assert found == [], describe(name, found)


# -- lanes ------------------------------------------------------------------------------------


def _lane(acta_app: Acta, *names: str) -> list[object]:
    @acta_app.job("step")
    def step(name: str) -> None:
        pass

    return [step.enqueue(name, lane="line") for name in names]


def test_overlapping_members_are_caught(acta_app: Acta, acta_host: Host, direct: Planter) -> None:
    a, b = _lane(acta_app, "a", "b")
    direct.run(a, end=False)
    direct.event(b, EventCode.PROMOTED)
    direct.run(b, end=False)  # b starts while a is still open
    direct.event(a, EventCode.EXECUTION_FINISHED, 1, 1)
    direct.event(a, EventCode.SUCCEEDED, 1)
    direct.event(b, EventCode.EXECUTION_FINISHED, 1, 1)

    [row] = direct.check("lanes_overlap")
    assert (row["lane"], row["open_ref"], row["started_ref"]) == ("line", str(a), str(b))
    assert (row["open_seq"], row["started_seq"]) == (1, 2)
    assert row["open_ended_event"] > row["started_event"]
    assert ("started before an earlier member ended", str(a), str(b)) in _problems(
        direct.check("lanes_order")
    )


def test_a_lost_lease_closes_the_run_but_only_once_it_is_recorded(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    a, b = _lane(acta_app, "a", "b")
    # a's first run is lost (its worker died), a second run finishes it, then b goes: clean,
    # however long the dead worker's handler really kept running.
    direct.run(a, end=False)
    direct.event(a, EventCode.LEASE_LOST, 1, 1)
    direct.run(a, execution=2, epoch=2)
    direct.event(a, EventCode.SUCCEEDED, 2)
    direct.event(b, EventCode.PROMOTED)
    direct.run(b)
    direct.event(b, EventCode.SUCCEEDED, 1)
    assert direct.check("lanes_overlap") == direct.check("lanes_order") == []

    c, d = (acta_app.enqueue("step", name, lane="late") for name in ("c", "d"))
    direct.run(c, end=False)  # c's worker dies here...
    direct.event(d, EventCode.PROMOTED)
    direct.run(d)  # ...and d starts (and even ends) before recovery records the loss
    direct.event(c, EventCode.LEASE_LOST, 1, 1)
    [row] = direct.check("lanes_overlap")
    assert (row["lane"], row["open_ref"], row["started_ref"]) == ("late", str(c), str(d))
    assert row["open_execution"] == 1 and row["open_ended_event"] > row["started_event"]


def test_first_starts_out_of_lane_order_are_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    a, b = _lane(acta_app, "a", "b")
    direct.event(b, EventCode.PROMOTED)
    direct.run(b)
    direct.event(b, EventCode.SUCCEEDED, 1)
    direct.run(a)
    direct.event(a, EventCode.SUCCEEDED, 1)

    assert direct.check("lanes_overlap") == []  # one at a time, but the wrong way round
    assert _problems(direct.check("lanes_order")) == [
        ("started before an earlier member started", str(a), str(b)),
    ]


def test_a_member_starting_while_the_head_waits_for_its_retry_is_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    a, b = _lane(acta_app, "a", "b")
    direct.run(a)  # attempt 1 fails...
    direct.event(a, EventCode.RETRY_SCHEDULED, 1)
    direct.run(b)  # ...and b jumps in before a's retry, never promoted
    direct.event(b, EventCode.SUCCEEDED, 1)
    direct.run(a, execution=2, epoch=2)
    direct.event(a, EventCode.SUCCEEDED, 2)

    assert direct.check("lanes_overlap") == []
    assert _problems(direct.check("lanes_order")) == [
        ("started before an earlier member ended", str(a), str(b)),
        ("started before it was promoted", None, str(b)),
    ]


def test_positions_against_enqueue_order_and_double_promotions_are_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    a, b, c = _lane(acta_app, "a", "b", "c")
    assert direct.check("lanes_order") == []  # enqueued, a promoted, nothing ran yet
    # Positions that disagree with the enqueue order, and a position held twice.
    direct.execute(
        "UPDATE {schema}.runtime SET lane_seq = 4 - lane_seq "
        "WHERE job_id IN (SELECT id FROM {schema}.jobs WHERE job_ref IN (:a, :c))",
        a=str(a),
        c=str(c),
    )
    direct.execute(
        "UPDATE {schema}.runtime SET lane_seq = 3 "
        "WHERE job_id = (SELECT id FROM {schema}.jobs WHERE job_ref = :b)",
        b=str(b),
    )
    direct.event(a, EventCode.PROMOTED)  # a second promotion
    assert set(_problems(direct.check("lanes_order"))) == {
        ("enqueued out of order", str(c), str(a)),
        ("enqueued out of order", str(c), str(b)),
        ("shares a position", str(a), str(b)),
        ("promoted more than once", None, str(a)),
    }


# -- concurrency ------------------------------------------------------------------------------


def test_more_runs_than_the_limit_in_force_are_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    @acta_app.job("rebuild")
    def rebuild(n: int) -> None:
        pass

    rebuild.enqueue(0, concurrency_key="acme")
    acta_host.run_until_idle()  # a real admission makes the gate row (one slot)
    assert direct.check("concurrency_limit") == []
    k1, k2, k3 = (rebuild.enqueue(n, concurrency_key="acme") for n in (1, 2, 3))
    direct.run(k1, end=False)
    direct.run(k2, end=False)  # two open under a limit of one
    direct.event(k1, EventCode.EXECUTION_FINISHED, 1, 1)
    direct.event(k2, EventCode.EXECUTION_FINISHED, 1, 1)
    [row] = direct.check("concurrency_limit")
    assert (row["gate_kind"], row["gate"], row["limit_in_force"]) == ("key", "acme", 1)
    assert row["open_runs"] == 2 and row["started_ref"] == str(k2)
    assert set(row["open_refs"].split()) == {str(k1), str(k2)}

    # An operator raises the limit to two: the same overlap after it is allowed, three is not.
    acta_app.set_concurrency_limit(key="acme", limit=2, expected_version=0)
    direct.run(k1, execution=2, epoch=2, end=False)
    direct.run(k2, execution=2, epoch=2, end=False)
    assert len(direct.check("concurrency_limit")) == 1  # only the earlier one
    direct.run(k3, end=False)
    found = direct.check("concurrency_limit")
    assert [(r["started_ref"], r["limit_in_force"], r["open_runs"]) for r in found] == [
        (str(k2), 1, 2),
        (str(k3), 2, 3),
    ]


def test_the_limit_an_admission_recorded_is_the_one_judged(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    @acta_app.job("rebuild")
    def rebuild(n: int) -> None:
        pass

    rebuild.enqueue(0, concurrency_key="acme")
    acta_host.run_until_idle()  # the gate row declares one slot
    refs = [rebuild.enqueue(n, concurrency_key="acme") for n in (1, 2, 3)]
    # Admissions that say they judged by two slots (a definition declaring two shares the key).
    for ref in refs:
        direct.event(ref, EventCode.ADMITTED, epoch=1, detail={"concurrency": "acme", "limit": 2})
        direct.run(ref, end=False)
    [row] = direct.check("concurrency_limit")
    assert (row["started_ref"], row["limit_in_force"], row["open_runs"]) == (str(refs[2]), 2, 3)


def test_a_definition_limit_is_checked_across_its_keyless_jobs(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    @acta_app.job("resize", concurrency_limit=2)
    def resize(n: int) -> None:
        pass

    resize.enqueue(0)
    acta_host.run_until_idle()
    refs = [resize.enqueue(n) for n in (1, 2, 3)]
    keyed = resize.enqueue(4, concurrency_key="other")  # its own gate: not counted here
    for ref in refs[:2]:
        direct.run(ref, end=False)
    direct.run(keyed, end=False)
    assert direct.check("concurrency_limit") == []
    direct.run(refs[2], end=False)
    [row] = direct.check("concurrency_limit")
    found = (row["gate_kind"], row["gate"], row["limit_in_force"], row["open_runs"])
    assert found == ("job", "resize", 2, 3) and row["started_ref"] == str(refs[2])


# -- rate -------------------------------------------------------------------------------------


def _admit(direct: Planter, ref: object, meter: str, ms: int) -> None:
    at = BASE + timedelta(milliseconds=ms)
    direct.event(ref, EventCode.ADMITTED, epoch=1, detail={"rate": meter}, at=at)


def test_starts_above_the_rate_envelope_are_caught(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    @acta_app.job("send", rate_limit="120/m")  # two a second: burst 2, then one per 500 ms
    def send(n: int) -> None:
        pass

    send.enqueue(0)
    acta_host.run_until_idle()  # the meter row, and one real start long before BASE
    refs = [send.enqueue(n) for n in range(1, 10)]
    # Two at once, then one each 500 ms: exactly on the envelope's edge, every window.
    for ref, ms in zip(refs, (0, 0, 500, 1000, 1500), strict=False):
        _admit(direct, ref, "send", ms)
    assert direct.check("rate_envelope") == []
    _admit(direct, refs[5], "send", 1900)  # six starts in 1.9 s: at most 2 + 3.8
    for ref in refs[6:]:
        _admit(direct, ref, "send", 60_000)  # three in one instant, a minute later
    first, burst = direct.check("rate_envelope")
    assert (first["meter"], first["burst"], first["starts"]) == ("send", 2, 6)
    assert float(first["window_seconds"]) == 1.9 and float(first["allowed"]) == 5.8
    assert (first["first_ref"], first["last_ref"]) == (str(refs[0]), str(refs[5]))
    assert (burst["starts"], float(burst["window_seconds"])) == (3, 0.0)

    # The envelope can be given: at 10/s the same starts are well inside it.
    assert direct.check("rate_envelope", meter="send", rate=10, period_ms=1000) == []
    assert direct.check("rate_envelope", meter="other") == []
    assert len(direct.check("rate_envelope", burst=1)) > 2


# -- what the checks found in the core --------------------------------------------------------


def test_an_operator_limit_on_a_definition_is_applied_or_refused(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    peer = acta_host.add_worker()
    outcomes: list[str] = []

    @acta_app.job("plain")
    def plain(n: int) -> None:
        if n == 1:
            outcomes.append(acta_host.tick(peer))

    try:
        acta_app.set_concurrency_limit(job="plain", limit=1, expected_version=0)
    except ValidationError:
        return  # refused: an operator cannot believe a limit is in force when it is not
    plain.enqueue(1)
    plain.enqueue(2)
    acta_host.run_until_idle()
    assert [g.limit for g in acta_app.gates() if g.name == "plain"] == [1]
    found = direct.check("concurrency_limit")
    assert outcomes == ["bounced"] and found == [], describe("concurrency_limit", found)


def test_an_operator_rate_on_a_definition_is_applied_or_refused(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("plain")
    def plain(n: int) -> None:
        pass

    try:
        acta_app.set_rate_limit("plain", "1/h", expected_version=0)
    except ValidationError:
        return
    for n in range(3):
        plain.enqueue(n)
    assert [acta_host.tick() for _ in range(3)] == ["completed", "bounced", "bounced"]
