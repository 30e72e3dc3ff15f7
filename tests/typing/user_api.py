"""A user's module that touches acta's public API the way an application does, for
``mypy --strict`` (tests/typing/test_user_api.py runs it): no casts, no ``type: ignore``.

It is type-checked, never imported by the test suite: nothing here connects to a database.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import acta
from acta import (
    Acta,
    ActaError,
    AuditLevel,
    Backoff,
    Cancel,
    ChildOutcome,
    EnqueueOptions,
    EventCode,
    EventInfo,
    Fail,
    Firing,
    InvalidPolicyError,
    JobContext,
    JobDefinition,
    JobFailedError,
    JobInfo,
    JobNotFoundError,
    JobOptions,
    JobRef,
    JobRequest,
    JobStatus,
    ManualClock,
    Outcome,
    Pause,
    Reason,
    Reschedule,
    Schedule,
    ScheduleInfo,
    SignalOutcome,
    SignalResult,
    SyncJobContext,
    UnknownOptionError,
    ValidationError,
)

app = Acta("shop.sqlite3", namespace="shop", clock=ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))


@dataclass(frozen=True)
class Order:
    order_id: int
    cents: int


# -- declaring jobs ----------------------------------------------------------------------------


@app.job("charge-card", max_attempts=5, backoff="exp(1s, 2, max=5m)", timeout="30s", priority=10)
def charge_card(order: Order, ctx: SyncJobContext) -> str:
    receipt: str = ctx.step("charge", lambda: f"rcpt-{order.order_id}", at_most_once=True)
    ctx.set_progress(1, 1, "charged")
    return receipt


@app.job("send-receipt", audit="failures", retention="7d", alerts="all", lane="receipts")
async def send_receipt(receipt: str, ctx: JobContext) -> Reschedule | Fail | None:
    if ctx.is_overdue:
        return Fail("too late to send")
    if ctx.attempt == 1 and ctx.deadline is not None:
        return Reschedule(delay="10m", reason="mail server busy")
    await ctx.note(f"sent {receipt}")
    return None


@app.job("nightly-report", schedule="@daily")
async def nightly_report(ctx: JobContext) -> int:
    firing: Firing | None = ctx.firing
    return 0 if firing is None else firing.at.hour


@app.job(
    "rollup",
    schedules={"fast": "5m", "slow": Schedule(cron="30 2 * * *", zone="Europe/Paris")},
    concurrency_limit=2,
)
def rollup(ctx: SyncJobContext) -> None:
    ctx.raise_if_cancelled()


@app.job("fan-out")
async def fan_out(orders: list[Order], ctx: JobContext) -> list[str]:
    refs: list[JobRef] = await ctx.spawn_many(charge_card, orders, group="charge")
    first: JobRef = await ctx.spawn(send_receipt, "r-1", name="receipt", delay="1m")
    outcomes: list[ChildOutcome] = await ctx.wait_children(timeout="1h")
    answer: SignalResult[object] = await ctx.try_wait_signal("approve", timeout=timedelta(hours=1))
    await ctx.sleep("5m")
    return (
        [str(r) for r in refs] + [str(first), str(answer.received)] + [o.status for o in outcomes]
    )


@app.job("hold")
def hold(ctx: SyncJobContext) -> Pause | Cancel:
    if ctx.cancelled:
        return Cancel("asked to stop")
    return Pause("waiting for the auditors")


options: JobOptions = {"max_attempts": 3, "timeout": timedelta(minutes=1)}
export: JobDefinition[object, object] = app.define("export", input=int, **options)


# -- enqueueing --------------------------------------------------------------------------------


def enqueue_everything() -> list[JobRef]:
    order = Order(1, 990)
    first: JobRef = charge_card.enqueue(order, dedup_key="order-1", tags=["shop"])
    later: JobRef = app.enqueue(
        "send-receipt",
        "r-1",
        delay="1h30m",
        priority=5,
        correlation_key="order-1",
        deadline=datetime(2026, 1, 2, tzinfo=UTC),
        deadline_policy="advisory",
    )
    common: EnqueueOptions = {"not_before": datetime(2026, 1, 3, tzinfo=UTC), "tenant": "acme"}
    requests: list[JobRequest] = [
        charge_card.request(Order(2, 100), **common),
        app.request("export", 7, concurrency_key="eu", lane="exports"),
    ]
    batch: list[JobRef] = app.enqueue_batch(requests)
    return [first, later, *batch]


async def enqueue_async() -> JobRef:
    ref: JobRef = await charge_card.enqueue_async(Order(3, 5), delay=30)
    other: JobRef = await app.enqueue_async(export, 1, deadline="15m")
    refs: list[JobRef] = await app.enqueue_batch_async([export.request(2)])
    return refs[0] if refs else other if ref else ref


# -- reading and operating ---------------------------------------------------------------------


def operate(ref: JobRef) -> str:
    job: JobInfo = app.get(ref)
    status: JobStatus = job.status
    listed: list[JobInfo] = app.jobs(status="failed", name="charge-card", limit=10)
    events: list[EventInfo] = app.events(ref)
    codes: list[EventCode] = [e.code for e in events]
    reasons: list[Reason | None] = [e.reason for e in events]
    outcomes: list[Outcome | None] = [e.outcome for e in events]
    sent: SignalOutcome = app.signal(ref, "approve", {"by": "ana"})
    cancelled: JobStatus = app.cancel(ref)
    schedules: list[ScheduleInfo] = app.schedules.list("rollup")
    upcoming: list[datetime] = app.schedules.preview("rollup", "fast", n=3)
    paused = app.schedules.pause("rollup", "fast", reason="maintenance")
    try:
        value: object = app.wait(ref, timeout="30s")
    except JobFailedError as failed:
        value = str(failed)
    except JobNotFoundError:
        value = None
    return (
        f"{status} {len(listed)} {codes} {reasons} {outcomes} {sent} {cancelled} "
        f"{len(schedules)} {upcoming} {len(paused)} {value} {AuditLevel.FULL}"
    )


def refusals() -> list[str]:
    seen: list[str] = []
    for attempt in (
        lambda: Schedule(cron="0 3 * *"),
        lambda: Backoff.parse("sometimes"),
        lambda: Reschedule(delay="soon"),
    ):
        try:
            attempt()
        except InvalidPolicyError as exc:
            seen.append(exc.field)
        except ValidationError as exc:
            seen.append(exc.rule)
        except UnknownOptionError as exc:
            seen.append(exc.problem)
        except ActaError as exc:
            seen.append(str(exc))
    return seen


def main() -> None:
    refs = enqueue_everything()
    print(operate(refs[0]), refusals(), acta.__version__)
    print(asyncio.run(enqueue_async()))
    print(app.run_and_wait(charge_card, Order(9, 1), timeout=10, dedup_key="o-9"))
