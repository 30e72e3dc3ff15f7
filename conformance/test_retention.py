"""Retention: ``sys.retention`` purges finished jobs once their definition's retention has
passed since they finished, with every row they own, while their events stay; the ref keeps
resolving (as purged, with its timeline). Nothing unfinished is purged, nor a recurring slot,
nor a parent with open children, nor a child whose parent is open.

Time is walked with the test clock on a host whose worker heartbeats hourly (advancing days
stays cheap) and whose retention slot comes due every second, so a purge lands within a
second of the instant it is due.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobRef, JobStatus, SyncJobContext
from acta.errors import JobNotFoundError, JobPurgedError
from acta.ledger.retention import Fence, purge_events, purge_jobs
from acta_testing import Host

if TYPE_CHECKING:
    from acta.clock import ManualClock
    from acta.provider.protocol import Provider
    from conformance.conftest import Ledger

MakeHost = Callable[..., Host]

# Every table whose rows belong to one job (key column first); events are not among them.
OWNED = (
    ("runtime", "job_id"),
    ("results", "job_id"),
    ("job_tags", "job_id"),
    ("steps", "job_id"),
    ("variables", "job_id"),
    ("progress", "job_id"),
    ("waits", "job_id"),
    ("signals", "job_id"),
    ("gate_holds", "job_id"),
    ("latches", "child_id"),
)


@pytest.fixture
def make_host(
    acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock
) -> Iterator[MakeHost]:
    made: list[Host] = []

    def make(**settings: Any) -> Host:
        host = Host(
            acta_app,
            acta_provider,
            acta_clock,
            **{"heartbeat": "1h", "retention_every": "1s", **settings},
        )
        made.append(host)
        return host

    yield make
    for host in made:
        host.close()


def exists(ledger: Ledger, ref: JobRef | str) -> bool:
    return bool(
        ledger.value("SELECT count(*) FROM {schema}.jobs WHERE job_ref = :ref", {"ref": str(ref)})
    )


def owned_rows(ledger: Ledger, job_id: int) -> dict[str, int]:
    """Rows of each job-owned table that still name ``job_id``."""
    return {
        table: int(
            ledger.value(
                f"SELECT count(*) FROM {{schema}}.{table} WHERE {column} = :id", {"id": job_id}
            )
        )
        for table, column in OWNED
    }


def slot_ref(app: Acta) -> JobRef:
    [slot] = app.jobs(name="sys.retention", include_system=True)
    return slot.job_ref


def purge_messages(app: Acta) -> list[str]:
    return [e.message or "" for e in app.events(slot_ref(app)) if e.code is EventCode.PURGED]


def test_each_definition_purges_at_its_own_retention_and_not_before(
    acta_app: Acta, make_host: MakeHost, ledger: Ledger
) -> None:
    @acta_app.job("report.hourly", retention="1d")
    def hourly(n: int) -> int:
        return n

    @acta_app.job("report.weekly", retention="3d")
    def weekly(n: int) -> int:
        return n

    @acta_app.job("audit.keep", retention=None)  # kept forever
    def keep(n: int) -> int:
        return n

    host = make_host()
    short, long = hourly.enqueue(1), weekly.enqueue(2)
    forever = keep.enqueue(3)  # also the newest job row, which SQLite never purges
    assert host.run_until_idle() == 3
    finished = host.job(short).updated_at

    host.advance(finished + timedelta(days=1, milliseconds=-1) - host.clock.now())
    host.tick()  # the retention slot is due: it runs, a millisecond too early for `short`
    assert [exists(ledger, r) for r in (short, long, forever)] == [True, True, True]

    host.advance("1s")
    host.tick()
    assert [exists(ledger, r) for r in (short, long, forever)] == [False, True, True]

    host.advance(finished + timedelta(days=3, milliseconds=-1) - host.clock.now())
    host.tick()
    assert exists(ledger, long)
    host.advance("1s")
    host.tick()
    assert [exists(ledger, r) for r in (short, long, forever)] == [False, False, True]

    host.advance("30d")
    host.tick()
    assert exists(ledger, forever)
    assert purge_messages(acta_app)[:2] == [
        "purged 1 job past their retention: report.hourly 1",
        "purged 1 job past their retention: report.weekly 1",
    ]


def test_a_purged_job_takes_every_row_it_owns_and_its_ref_still_resolves(
    acta_app: Acta, make_host: MakeHost, ledger: Ledger
) -> None:
    @acta_app.job("invoice.send", retention="1h")
    def send(n: int, ctx: SyncJobContext) -> dict[str, int]:
        ctx.step("render", lambda: n * 2)
        ctx.set("copies", 2)
        ctx.set_progress(1, 1, "sent")
        ctx.sleep("1m", name="cool-off")
        return {"invoice": n}

    @acta_app.job("invoice.later", retention=None)
    def later(n: int) -> None:
        return None

    host = make_host()
    ref = send.enqueue(7, tags=["billing", "eu"])
    assert host.tick() == "suspended"
    host.advance("1m")
    assert host.tick() == "completed"
    later.enqueue(0)  # SQLite keeps the newest job row; this one is newer
    info = host.job(ref)
    before = acta_app.events(ref)
    owned = owned_rows(ledger, info.job_id)
    assert owned["runtime"] == owned["results"] == owned["steps"] == owned["variables"] == 1
    assert owned["job_tags"] == 2 and owned["progress"] == 1 and owned["waits"] == 1

    host.advance("1h")
    host.tick()
    assert not exists(ledger, ref)
    assert owned_rows(ledger, info.job_id) == dict.fromkeys(owned, 0)
    assert acta_app.events(ref) == before  # the timeline stays, event for event

    with pytest.raises(JobPurgedError) as purged:
        acta_app.get(ref)
    assert isinstance(purged.value, JobNotFoundError)  # code treating it as missing still works
    assert (purged.value.ref, purged.value.name, purged.value.status) == (
        str(ref),
        "invoice.send",
        "succeeded",
    )
    assert purged.value.finished_at == info.updated_at
    assert purged.value.purged_at == host.clock.now()
    with pytest.raises(JobPurgedError):
        acta_app.result(ref)
    tombstone = acta_app.purged(ref)
    assert tombstone is not None and tombstone.status is JobStatus.SUCCEEDED

    unknown = JobRef.new(1_700_000_000_000)
    with pytest.raises(JobNotFoundError) as missing:
        acta_app.get(unknown)
    assert not isinstance(missing.value, JobPurgedError)
    assert acta_app.purged(unknown) is None


def test_nothing_unfinished_and_no_slot_is_purged(
    acta_app: Acta, make_host: MakeHost, ledger: Ledger
) -> None:
    @acta_app.job("wait.approval", retention="1m")
    def approval(n: int, ctx: SyncJobContext) -> None:
        ctx.wait_signal("approved")

    @acta_app.job("later", retention="1m")
    def later_job(n: int) -> None:
        return None

    @acta_app.job("flaky", retention="1m", max_attempts=5, backoff="30d")
    def flaky(n: int) -> None:
        raise RuntimeError("upstream is down")

    host = make_host()
    waiting = approval.enqueue(1)
    retrying = flaky.enqueue(2)
    delayed = later_job.enqueue(3, delay="30d")
    assert host.tick() == "suspended"
    assert host.tick() == "rearmed"  # a retry is due in 30 days: ready, not finished
    host.advance("20d")
    host.tick()
    assert [exists(ledger, r) for r in (waiting, retrying, delayed)] == [True] * 3
    statuses = {
        name: status
        for name, status in ledger.rows(
            "SELECT job_name, status FROM {schema}.jobs_view WHERE job_name LIKE 'sys.%'"
        )
    }
    assert set(statuses) == {"sys.recovery", "sys.retention"}
    assert purge_messages(acta_app) == []


def test_a_family_is_purged_only_when_nobody_in_it_is_still_open(
    acta_app: Acta, make_host: MakeHost, ledger: Ledger
) -> None:
    @acta_app.job("price", retention="1m")
    def price(n: int) -> int:
        return n * 100

    @acta_app.job("basket", retention="1m")
    def basket(orders: list[int], ctx: SyncJobContext) -> int:
        ctx.spawn_many(price, orders, group="line")
        return sum(o.result for o in ctx.wait_children())

    @acta_app.job("fire-and-forget", retention="1m")
    def launcher(n: int, ctx: SyncJobContext) -> None:
        ctx.spawn(price, n, name="later", delay="30d")

    host = make_host()
    parent = basket.enqueue([1, 2])
    assert host.tick() == "suspended"
    assert host.tick() == "completed"  # the first child finishes; the parent still waits
    [first, second] = [
        JobRef.parse(r)
        for (r,) in ledger.rows(
            "SELECT job_ref FROM {schema}.jobs_view WHERE parent_ref = :p ORDER BY child_name",
            {"p": str(parent)},
        )
    ]
    launched = launcher.enqueue(5)  # its child is the newest job row, which SQLite keeps
    host.advance("1h")
    # Retention runs first (the tick's system jobs), then the second child: while it ran, the
    # first child's parent was open, so the child was kept.
    assert host.tick() == "completed"
    assert exists(ledger, first) and exists(ledger, second)
    assert [host.tick(), host.tick()] == ["completed", "completed"]  # parent and launcher
    assert host.job(parent).status is JobStatus.SUCCEEDED
    assert host.job(launched).status is JobStatus.SUCCEEDED
    host.advance("1h")
    host.tick()
    assert [exists(ledger, r) for r in (parent, first, second)] == [False, False, False]
    assert exists(ledger, launched)  # its child is still open
    with pytest.raises(JobPurgedError):
        acta_app.get(first)


def test_purges_run_in_batches_with_one_event_each_and_the_slot_re_arms(
    acta_app: Acta, make_host: MakeHost, ledger: Ledger
) -> None:
    @acta_app.job("thumbnail", retention="1m")
    def thumbnail(n: int) -> None:
        return None

    @acta_app.job("keep", retention=None)
    def keep(n: int) -> None:
        return None

    host = make_host(retention_batch=2, retention_every="10m")
    refs = [thumbnail.enqueue(n) for n in range(5)]
    keep.enqueue(0)
    assert host.run_until_idle() == 6
    host.advance("10m")  # the slot first comes due 10 minutes after the worker registered
    host.tick()
    assert not any(exists(ledger, r) for r in refs)
    assert purge_messages(acta_app) == [
        "purged 2 jobs past their retention: thumbnail 2",
        "purged 2 jobs past their retention: thumbnail 2",
        "purged 1 job past their retention: thumbnail 1",
    ]
    status, wakes = ledger.rows(
        "SELECT status, next_run_at FROM {schema}.jobs_view WHERE job_name = 'sys.retention'"
    )[0]
    assert status == "ready"
    assert host.job(slot_ref(acta_app)).next_run_at == host.clock.now() + timedelta(minutes=10)
    assert wakes is not None

    refs = [thumbnail.enqueue(n) for n in range(3)]
    keep.enqueue(1)
    assert host.run_until_idle() == 4
    host.advance("5m")
    host.tick()  # the slot is not due yet: nothing purged
    assert all(exists(ledger, r) for r in refs)
    host.advance("5m")
    host.tick()
    assert not any(exists(ledger, r) for r in refs)
    assert len(purge_messages(acta_app)) == 5


def test_events_leave_at_the_event_retention_and_then_the_ref_is_unknown(
    acta_app: Acta, make_host: MakeHost, ledger: Ledger
) -> None:
    @acta_app.job("ping", retention="1m")
    def ping(n: int) -> None:
        return None

    @acta_app.job("keep", retention=None)
    def keep(n: int) -> None:
        return None

    host = make_host(event_retention="2d")
    old = ping.enqueue(1)
    keep.enqueue(0)
    assert host.run_until_idle() == 2
    host.advance("1h")
    host.tick()
    assert not exists(ledger, old)
    assert acta_app.events(old)  # purged, and the timeline is still there

    young = keep.enqueue(2)
    host.advance("1d")
    assert host.run_until_idle() == 1
    host.advance("1d")  # two days after the first jobs' events, one after the young job's
    host.tick()
    assert acta_app.events(old) == []  # past the event retention
    assert acta_app.purged(old) is not None  # its tombstone is younger than two days
    assert [e.code for e in acta_app.events(young)][:1] == [EventCode.ENQUEUED]
    messages = purge_messages(acta_app)
    assert any(m.startswith("purged ") and " events and " in m for m in messages)

    host.advance("1h")
    host.tick()
    with pytest.raises(JobNotFoundError) as gone:
        acta_app.get(old)
    assert not isinstance(gone.value, JobPurgedError)
    oldest = ledger.value(
        "SELECT min(at) FROM {schema}.events_view WHERE namespace = :ns",
        {"ns": acta_app.namespace},
    )
    assert oldest is not None


def test_the_declared_retention_is_stored_on_the_definition(
    acta_app: Acta, make_host: MakeHost, ledger: Ledger
) -> None:
    @acta_app.job("two-weeks", retention="14d")
    def two_weeks(n: int) -> None:
        return None

    @acta_app.job("forever", retention=None)
    def forever(n: int) -> None:
        return None

    @acta_app.job("default")
    def default(n: int) -> None:
        return None

    acta_app.define("producer-only", retention="90m")
    host = make_host()
    acta_app.enqueue("producer-only")  # a producer writes the definition first
    host.tick()
    stored = dict(ledger.rows("SELECT name, retention_ms FROM {schema}.definitions"))
    day = 86_400_000
    assert stored["two-weeks"] == 14 * day
    assert stored["forever"] is None
    assert stored["default"] == 7 * day
    assert stored["producer-only"] == 90 * 60_000


def test_a_purge_by_a_run_that_no_longer_holds_the_slot_writes_nothing(
    acta_app: Acta, make_host: MakeHost, ledger: Ledger
) -> None:
    @acta_app.job("ping", retention="1m")
    def ping(n: int) -> None:
        return None

    @acta_app.job("keep", retention=None)
    def keep(n: int) -> None:
        return None

    host = make_host()
    ref = ping.enqueue(1)
    keep.enqueue(0)
    assert host.run_until_idle() == 2
    host.advance("1h")
    slot = acta_app.get(slot_ref(acta_app))
    assert slot.status is JobStatus.READY  # nobody holds it: any fence naming it is stale
    worker = host.worker
    fence = Fence(worker.namespace_id, str(slot.job_ref), worker.identity.worker_id, 1)
    ledger_of_app = host.worker.ledger
    now = host.clock.now()
    done = ledger_of_app.run(lambda: purge_jobs(fence, now, 10))
    assert not done.held and done.total == 0
    events = ledger_of_app.run(lambda: purge_events(fence, now, 1, 10))
    assert not events.held and events.events == 0
    assert exists(ledger, ref)
    assert acta_app.events(ref)  # not one event deleted
    assert purge_messages(acta_app) == []

    host.tick()  # the slot's own run, which holds it, purges
    assert not exists(ledger, ref)
