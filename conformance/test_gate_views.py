"""What an operator reads about the gates straight from SQL: jobs_view's lane, place and key;
lanes_view's head and depth; gates_view's limit in force, holders and version; meters_view's
next free instant; and the admission events (issue 9, item 6). Runs are frozen mid-handler by
killing their worker, so the views are read while slots and heads are really held.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from acta import Acta, EventCode, JobContext
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def instant(value: Any) -> datetime:
    """A timestamp column as an aware datetime (SQLite keeps UTC text, PostgreSQL timestamptz)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def test_jobs_view_shows_each_jobs_lane_place_and_key(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("bill")
    def bill(n: int) -> None:
        pass

    bill.enqueue(1, lane="cust-1", concurrency_key="acme")
    bill.enqueue(2, lane="cust-1")
    bill.enqueue(3, concurrency_key="acme")
    bill.enqueue(4)
    rows = ledger.rows(
        "SELECT lane, lane_seq, concurrency_key, status FROM {schema}.jobs_view "
        "WHERE job_name = 'bill' ORDER BY job_id"
    )
    assert [(r[0], r[1] and int(r[1]), r[2], r[3]) for r in rows] == [
        ("cust-1", 1, "acme", "ready"),
        ("cust-1", 2, None, "blocked"),
        (None, None, "acme", "ready"),
        (None, None, None, "ready"),
    ]


def test_lanes_view_shows_each_lanes_head_and_depth(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()

    @acta_app.job("step")
    def step(name: str, ctx: JobContext) -> None:
        if name == "a1" and ctx.execution == 1:
            acta_host.kill(first)  # freeze the head mid-run

    a1 = step.enqueue("a1", lane="lane-a")
    for name in ("a2", "a3"):
        step.enqueue(name, lane="lane-a")
    b1 = step.enqueue("b1", lane="lane-b")
    assert acta_host.tick(first) == "killed"
    read = "SELECT lane, head_job_ref, head_status, depth, last_seq FROM {schema}.lanes_view "
    rows = ledger.rows(read + "WHERE namespace = :ns ORDER BY lane", {"ns": acta_app.namespace})
    assert [(r[0], r[1], r[2], int(r[3]), int(r[4])) for r in rows] == [
        ("lane-a", str(a1), "executing", 3, 3),
        ("lane-b", str(b1), "ready", 1, 1),
    ]
    acta_host.advance(first.lease + peer.heartbeat)
    acta_host.run_until_idle(peer)
    rows = ledger.rows(read + "ORDER BY lane")
    assert [(r[1], r[2], int(r[3]), int(r[4])) for r in rows] == [
        (None, None, 0, 3),
        (None, None, 0, 1),
    ]


def test_gates_view_shows_holders_limit_in_force_and_version(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    first = acta_host.worker
    peer = acta_host.add_worker()
    rescuer = acta_host.add_worker()
    during: list[str] = []

    @acta_app.job("sync-feed", concurrency_limit=2)
    def sync_feed(n: int, ctx: JobContext) -> None:
        if ctx.execution > 1:
            return
        if n == 1:
            during.append(acta_host.tick(peer))  # n=2 takes the second slot and freezes
        acta_host.kill(first if n == 1 else peer)

    @acta_app.job("crunch", concurrency_limit=4)
    def crunch(n: int) -> None:
        pass

    held = sorted(str(sync_feed.enqueue(n, concurrency_key="acme")) for n in (1, 2))
    crunch.enqueue(1)
    assert acta_host.tick(first) == "killed"
    assert during == ["killed"]
    read = (
        "SELECT name, kind, limit_in_force, declared_limit, limit_override, held, holders, "
        "version FROM {schema}.gates_view WHERE name = :name"
    )
    [row] = ledger.rows(read, {"name": "acme"})
    assert row[:6] == ("acme", "key", 2, 2, None, 2)
    assert json.loads(row[6]) == held and int(row[7]) == 0

    acta_app.set_concurrency_limit(key="acme", limit=3, expected_version=0)
    [row] = ledger.rows(read, {"name": "acme"})
    assert (row[2], row[3], row[4], row[5], int(row[7])) == (3, 2, 3, 2, 1)

    acta_host.advance(first.lease + rescuer.heartbeat)
    acta_host.run_until_idle(rescuer)
    [row] = ledger.rows(read, {"name": "acme"})
    assert (row[5], row[6]) == (0, None)  # recovery and the reruns released every slot
    [row] = ledger.rows(read, {"name": "crunch"})
    assert row[:6] == ("crunch", "job", 4, 4, None, 0)


def test_meters_view_shows_the_next_free_instant(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("send-sms", rate_limit="10/s")
    def send(n: int) -> None:
        pass

    for n in range(12):
        send.enqueue(n)
    begin = acta_host.clock.now()
    for _ in range(12):
        acta_host.tick()  # ten start, two book the next two turns
    read = "SELECT name, rate, period_ms, next_free_at, version FROM {schema}.meters_view"
    [row] = ledger.rows(read)
    turn = begin + timedelta(milliseconds=300)  # after the two booked turns
    assert row[:3] == ("send-sms", 10, 1000)
    assert instant(row[3]) == turn and int(row[4]) == 0
    [meter] = acta_app.meters()
    assert meter.next_free_at is not None and instant(meter.next_free_at) == turn

    late = send.enqueue(12)  # a new arrival gets exactly that turn
    assert acta_host.tick() == "bounced"
    assert acta_host.job(late).next_run_at == turn
    [row] = ledger.rows(read)
    assert instant(row[3]) == turn + timedelta(milliseconds=100)


def test_admission_events_name_the_gates(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("send-sms", rate_limit="1/s")
    def send(n: int) -> None:
        pass

    @acta_app.job("log-line")
    def log_line(n: int) -> None:
        pass

    first = send.enqueue(1, concurrency_key="acme", lane="cust-1")
    second = send.enqueue(2)
    free = log_line.enqueue(1)
    acta_host.run_until_idle()

    def detail(ref: Any, code: EventCode) -> dict[str, Any]:
        [event] = [e for e in acta_host.events(ref) if e.code is code]
        return dict(json.loads(event.detail or "{}"))

    assert detail(first, EventCode.ADMITTED) == {
        "concurrency": "acme",
        "limit": 1,
        "rate": "send-sms",
    }
    assert detail(second, EventCode.ADMITTED) == {"rate": "send-sms"}
    bounced = detail(second, EventCode.BOUNCED)
    assert (bounced["gate"], bounced["key"]) == ("rate", "send-sms")
    assert acta_host.event_names(first)[:3] == ["enqueued", "promoted", "admitted"]
    # A job with no gate starts without an admission step.
    assert acta_host.event_names(free) == [
        "enqueued",
        "execution-started",
        "execution-finished",
        "succeeded",
    ]
