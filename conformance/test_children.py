"""Child jobs: a handler spawns jobs of its own and waits for them without holding a worker.

Children are ordinary jobs (their own attempts and timeline) with their lineage recorded; the
parent waits suspended, no lease held, one latch per unfinished child; the last child's
terminal transition makes it ready and it resumes once, with every child's outcome in spawn
order. Re-entry finds the children already spawned; a bounded wait gives up on the late ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from acta import (
    Acta,
    ChildOutcome,
    JobContext,
    JobRef,
    JobStatus,
    SyncJobContext,
    ValidationError,
)
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


@dataclass(frozen=True)
class Receipt:
    order: int
    cents: int


def view(ledger: Ledger, ref: JobRef | str, *columns: str) -> tuple[Any, ...]:
    """Columns of one job's jobs_view row, as an operator reads them."""
    [row] = ledger.rows(
        f"SELECT {', '.join(columns)} FROM {{schema}}.jobs_view WHERE job_ref = :ref",
        {"ref": str(ref)},
    )
    return tuple(row)


def latches(ledger: Ledger, parent: JobRef) -> int:
    """Latch rows held on ``parent`` (one per child that has not finished)."""
    return int(
        ledger.value(
            "SELECT count(*) FROM {schema}.latches l "
            "JOIN {schema}.jobs p ON p.id = l.parent_id WHERE p.job_ref = :ref",
            {"ref": str(parent)},
        )
    )


def test_the_parent_waits_without_a_lease_and_resumes_once_with_results_in_spawn_order(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    resumed: list[list[ChildOutcome]] = []

    @acta_app.job("price-order")
    async def price(order: int) -> Receipt:
        return Receipt(order, order * 100)

    @acta_app.job("price-basket")
    def basket(orders: list[int], ctx: SyncJobContext) -> int:
        ctx.spawn_many(price, orders, group="line")
        outcomes = ctx.wait_children()
        resumed.append(outcomes)
        return sum(o.result.cents for o in outcomes)

    parent = basket.enqueue([7, 3, 5])
    assert acta_host.tick() == "suspended"
    assert view(ledger, parent, "status", "lease_worker", "lease_expires_at") == (
        "suspended",
        None,
        None,
    )
    assert view(ledger, parent, "open_children", "waiting_for") == (3, "children:children-1")
    assert latches(ledger, parent) == 3
    kids = ledger.rows(
        "SELECT job_ref, child_name, parent_ref, root_ref FROM {schema}.jobs_view "
        "WHERE parent_ref = :ref ORDER BY child_name",
        {"ref": str(parent)},
    )
    assert [(k[1], k[2], k[3]) for k in kids] == [
        (f"line-{i}", str(parent), str(parent)) for i in range(3)
    ]

    for left in (2, 1):
        assert acta_host.tick() == "completed"
        assert view(ledger, parent, "status", "open_children") == ("suspended", left)
        assert latches(ledger, parent) == left
        assert "released" not in acta_host.event_names(parent)
    assert acta_host.tick() == "completed"  # the last child releases the parent
    assert view(ledger, parent, "status", "open_children") == ("ready", 0)
    assert latches(ledger, parent) == 0
    assert acta_host.event_names(parent)[-1] == "released"

    assert acta_host.tick() == "completed"
    assert acta_host.tick() == "nothing-claimed"
    [outcomes] = resumed  # resumed once
    assert [o.name for o in outcomes] == ["line-0", "line-1", "line-2"]
    assert [str(o.ref) for o in outcomes] == [k[0] for k in kids]
    assert [o.result for o in outcomes] == [Receipt(7, 700), Receipt(3, 300), Receipt(5, 500)]
    assert all(o.status == "succeeded" and not o.timed_out for o in outcomes)
    assert {o.job for o in outcomes} == {"price-order"}
    assert acta_app.result(parent) == 1500
    assert acta_host.job(parent).executions == 2
    names = acta_host.event_names(parent)
    assert [n for n in names if n in ("children-spawned", "suspended", "released")] == [
        "children-spawned",
        "suspended",
        "released",
    ]


def test_lineage_reaches_the_top_job_through_a_grandchild(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: dict[str, tuple[JobRef | None, JobRef | None]] = {}

    @acta_app.job("leaf")
    def leaf(n: int, ctx: SyncJobContext) -> int:
        seen["leaf"] = (ctx.parent, ctx.root)
        return n + 1

    @acta_app.job("branch")
    def branch(n: int, ctx: SyncJobContext) -> int:
        seen["branch"] = (ctx.parent, ctx.root)
        ctx.spawn(leaf, n, name="only-leaf")
        [outcome] = ctx.wait_children()
        return int(outcome.result) * 10

    @acta_app.job("trunk")
    async def trunk(n: int, ctx: JobContext) -> int:
        seen["trunk"] = (ctx.parent, ctx.root)
        child = await ctx.spawn(branch, n, name="the-branch")
        [outcome] = await ctx.wait_children()
        assert outcome.ref == child
        return int(outcome.result)

    top = trunk.enqueue(4)
    acta_host.run_until_idle()
    assert acta_app.result(top) == 50
    [mid] = acta_host.jobs(name="branch")
    [low] = acta_host.jobs(name="leaf")
    assert view(ledger, top, "parent_ref", "root_ref", "child_name") == (None, None, None)
    assert view(ledger, mid.job_ref, "parent_ref", "root_ref", "child_name") == (
        str(top),
        str(top),
        "the-branch",
    )
    assert view(ledger, low.job_ref, "parent_ref", "root_ref", "child_name") == (
        mid.job_ref,
        str(top),
        "only-leaf",
    )
    assert seen["trunk"] == (None, None)
    assert seen["branch"] == (top, top)
    assert seen["leaf"] == (JobRef.parse(mid.job_ref), top)


def test_a_child_retries_on_its_own_and_keeps_its_own_timeline(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    tries: list[int] = []

    @acta_app.job("fetch-rate", max_attempts=2, backoff="10s")
    def fetch(currency: str, ctx: SyncJobContext) -> float:
        tries.append(ctx.attempt)
        if ctx.attempt == 1:
            raise ConnectionError("rate service down")
        return 1.25

    @acta_app.job("convert")
    def convert(amount: float, ctx: SyncJobContext) -> float:
        ctx.spawn(fetch, "EUR", name="rate")
        [rate] = ctx.wait_children()
        return amount * float(rate.result)

    parent = convert.enqueue(8.0)
    assert acta_host.tick() == "suspended"
    assert acta_host.tick() == "rearmed"  # the child's first attempt failed; the parent waits on
    [child] = acta_host.jobs(name="fetch-rate")
    assert view(ledger, parent, "status", "open_children") == ("suspended", 1)
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance("10s")
    assert acta_host.tick() == "completed"
    assert acta_host.tick() == "completed"
    assert tries == [1, 2]
    assert acta_app.result(parent) == 10.0
    assert acta_host.job(child.job_ref).attempts == 1
    child_events = acta_host.event_names(child.job_ref)
    assert child_events[0] == "enqueued" and child_events[-1] == "succeeded"
    assert "retry-scheduled" in child_events
    assert "retry-scheduled" not in acta_host.event_names(parent)


def test_the_correlation_key_is_inherited_unless_a_spawn_gives_its_own(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    keys: dict[str, str | None] = {}

    @acta_app.job("notify")
    def notify(who: str, ctx: SyncJobContext) -> None:
        keys[who] = ctx.correlation_key

    @acta_app.job("checkout")
    def checkout(order: str, ctx: SyncJobContext) -> None:
        ctx.spawn(notify, "buyer", name="buyer")
        ctx.spawn(notify, "seller", name="seller", correlation_key="seller-feed")
        ctx.wait_children()

    parent = checkout.enqueue("o-1", correlation_key="order-o-1")
    acta_host.run_until_idle()
    assert keys == {"buyer": "order-o-1", "seller": "seller-feed"}
    rows = ledger.rows(
        "SELECT child_name, correlation_key FROM {schema}.jobs_view WHERE parent_ref = :ref "
        "ORDER BY child_name",
        {"ref": str(parent)},
    )
    assert [tuple(r) for r in rows] == [("buyer", "order-o-1"), ("seller", "seller-feed")]
    assert acta_host.job(parent).status is JobStatus.SUCCEEDED


def test_a_failed_or_cancelled_child_is_reported_and_the_parent_carries_on(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    got: list[ChildOutcome] = []

    @acta_app.job("ship", max_attempts=1)
    def ship(parcel: str) -> str:
        if parcel == "broken":
            raise ValueError("parcel refused by carrier")
        return f"shipped {parcel}"

    @acta_app.job("dispatch")
    def dispatch(parcels: list[str], ctx: SyncJobContext) -> int:
        ctx.spawn_many(ship, parcels, group="p")
        got.extend(ctx.wait_children())
        return sum(o.succeeded for o in got)

    parent = dispatch.enqueue(["good", "broken", "held"])
    assert acta_host.tick() == "suspended"
    held = next(
        o for o in acta_host.jobs(name="ship") if view(ledger, o.job_ref, "child_name")[0] == "p-2"
    )
    assert acta_app.cancel(held.job_ref) is JobStatus.CANCELLED
    acta_host.run_until_idle()
    assert acta_host.job(parent).status is JobStatus.SUCCEEDED
    assert acta_app.result(parent) == 1
    assert [(o.name, o.status) for o in got] == [
        ("p-0", "succeeded"),
        ("p-1", "failed"),
        ("p-2", "cancelled"),
    ]
    assert [o.result for o in got] == ["shipped good", None, None]
    assert not any(o.timed_out for o in got)


def test_a_parent_re_entered_after_a_failure_finds_its_children_instead_of_spawning_again(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    spawned: list[list[JobRef]] = []

    @acta_app.job("resize")
    def resize(size: int) -> int:
        return size // 2

    @acta_app.job("gallery", max_attempts=2, backoff="1s")
    def gallery(sizes: list[int], ctx: SyncJobContext) -> list[int]:
        # The children wait an hour, so they are still open when the parent comes back.
        spawned.append(ctx.spawn_many(resize, sizes, group="img", delay="1h"))
        if ctx.execution == 1:
            raise RuntimeError("thumbnail cache unreachable")
        return [o.result for o in ctx.wait_children()]

    parent = gallery.enqueue([640, 320])
    assert acta_host.tick() == "rearmed"
    jobs_before = ledger.user_jobs()
    assert view(ledger, parent, "open_children") == (2,)
    acta_host.advance("1s")
    assert acta_host.tick() == "suspended"
    first, second = spawned
    assert first == second
    assert ledger.user_jobs() == jobs_before == 3
    assert view(ledger, parent, "open_children") == (2,)  # not counted twice
    assert latches(ledger, parent) == 2
    assert acta_host.event_names(parent).count("children-spawned") == 1
    acta_host.run_until_idle()
    assert acta_app.result(parent) == [320, 160]
    assert all(acta_host.job(ref).executions == 1 for ref in first)


def test_children_finished_before_the_wait_let_it_return_at_once(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    peer = acta_host.add_worker()
    ran: list[str] = []

    @acta_app.job("audit-line")
    def audit_line(n: int) -> int:
        ran.append(f"line-{n}")
        return n * n

    @acta_app.job("audit")
    def audit(n: int, ctx: SyncJobContext) -> int:
        ctx.spawn_many(audit_line, list(range(n)), group="l")
        # Another worker finishes every child while this run is still going.
        assert [acta_host.tick(peer) for _ in range(n)] == ["completed"] * n
        ran.append("waiting")
        return sum(o.result for o in ctx.wait_children())

    parent = audit.enqueue(3)
    assert acta_host.tick() == "completed"  # never suspended
    assert ran == ["line-0", "line-1", "line-2", "waiting"]
    assert acta_app.result(parent) == 0 + 1 + 4
    assert acta_host.job(parent).executions == 1
    names = acta_host.event_names(parent)
    assert "suspended" not in names and "released" not in names
    assert view(ledger, parent, "open_children") == (0,)
    assert latches(ledger, parent) == 0


@pytest.mark.parametrize("name", ["", " padded", "tab\there", "x" * 201])
def test_a_bad_child_name_fails_the_parent_and_spawns_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger, name: str
) -> None:
    @acta_app.job("leaf")
    def leaf(n: int) -> int:
        return n

    @acta_app.job("spawner", max_attempts=1)
    def spawner(n: int, ctx: SyncJobContext) -> None:
        ctx.spawn(leaf, n, name=name)

    parent = spawner.enqueue(1)
    assert acta_host.tick() == "failed"
    assert ledger.user_jobs() == 1
    [error] = view(ledger, parent, "last_error")
    assert "InvalidNameError: child name" in error
    assert latches(ledger, parent) == 0


@pytest.mark.parametrize(
    "group",
    [7, b"lines", ["lines"], "", " lines", "x" * 200, None],
    ids=["int", "bytes", "list", "empty", "padded", "too-long", "none"],
)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_bad_spawn_many_group_is_refused_by_name_and_spawns_nothing(
    acta_app: Acta, acta_host: Host, ledger: Ledger, group: object, flavour: str
) -> None:
    refused: list[tuple[str, str, str]] = []

    @acta_app.job("leaf")
    def leaf(n: int) -> int:
        return n

    def record(exc: ValidationError) -> None:
        refused.append((type(exc).__name__, exc.field, exc.rule))

    if flavour == "sync":

        @acta_app.job("fan-out", max_attempts=1)
        def fan_out(n: int, ctx: SyncJobContext) -> None:
            try:
                ctx.spawn_many(leaf, [1, 2], group=group)  # type: ignore[arg-type]
            except ValidationError as exc:
                record(exc)

    else:

        @acta_app.job("fan-out", max_attempts=1)
        async def fan_out_async(n: int, ctx: JobContext) -> None:
            try:
                await ctx.spawn_many(leaf, [1, 2], group=group)  # type: ignore[arg-type]
            except ValidationError as exc:
                record(exc)

    acta_app.enqueue("fan-out", 1)
    assert acta_host.tick() == "completed"
    [(kind, field, rule)] = refused
    assert field == "group" and "character" in rule, (kind, field, rule)
    assert ledger.user_jobs() == 1  # no child written


def test_an_earlier_wait_answers_the_same_children_on_re_entry(
    acta_app: Acta, acta_host: Host
) -> None:
    answers: list[tuple[int, list[str | None], list[str | None]]] = []

    @acta_app.job("leaf")
    def leaf(n: int) -> int:
        return n

    @acta_app.job("two-rounds")
    def two_rounds(n: int, ctx: SyncJobContext) -> None:
        ctx.spawn(leaf, 1, name="round-1")
        first = ctx.wait_children()
        ctx.spawn(leaf, 2, name="round-2")
        second = ctx.wait_children()
        answers.append((ctx.execution, [o.name for o in first], [o.name for o in second]))

    two_rounds.enqueue(0)
    acta_host.run_until_idle()
    # Execution 2 saw round-1 at the first wait; execution 3 replays it and must see the same.
    assert answers == [(3, ["round-1"], ["round-1", "round-2"])]
