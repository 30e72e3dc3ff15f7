"""Locks inside a running handler (``ctx.lock``, issue 34 item 1): one holder at a time
across workers, released when the block exits (normally or by an exception), a typed error
when the wait times out, and exclusion that rides the holder's lease: a dead holder's lock is
freed by recovery, and a fenced zombie neither keeps nor releases it. Overlap is made real by
ticking peers from inside a running handler, as the gate specs do.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from acta import (
    Acta,
    InvalidNameError,
    JobContext,
    JobStatus,
    LeaseLostError,
    LockTimeoutError,
    SyncJobContext,
    ValidationError,
)
from acta.ops.explanation import Explanation, Verdict
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def messages(acta_host: Host, ref: object) -> str:
    """Every event message of the job ``ref``, one text."""
    return " ".join(event.message or "" for event in acta_host.events(ref))


def holders(ledger: Ledger) -> list[tuple[str, str, int]]:
    """(key, holder job ref, held) of every lock row, read from locks_view."""
    rows = ledger.rows(
        "SELECT lock_key, holder_job_ref, held FROM {schema}.locks_view ORDER BY lock_key"
    )
    return [(key, ref, int(held)) for key, ref, held in rows]


def test_a_second_job_cannot_take_a_held_lock(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    peer = acta_host.add_worker()
    seen: dict[str, object] = {}

    @acta_app.job("post-ledger", max_attempts=1)
    def post(n: int, ctx: SyncJobContext) -> None:
        if n == 1:
            with ctx.lock("account-acme", timeout="5s"):
                seen["peer"] = acta_host.tick(peer)  # the other job finds the lock held
            return
        try:
            with ctx.lock("account-acme", timeout=0):
                seen["entered"] = True
        except LockTimeoutError as exc:
            seen["error"] = exc
            raise

    first = post.enqueue(1)
    second = post.enqueue(2)
    assert acta_host.tick() == "completed"
    assert seen["peer"] == "failed"
    assert "entered" not in seen
    error = seen["error"]
    assert isinstance(error, LockTimeoutError)
    assert (error.key, error.holder) == ("account-acme", str(first))
    assert acta_host.job(second).status is JobStatus.FAILED
    assert holders(ledger) == []  # released on exit: the row is gone


def test_release_on_an_exception_lets_the_next_job_in(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    order: list[str] = []

    @acta_app.job("rebuild", max_attempts=1)
    async def rebuild(n: int, ctx: JobContext) -> None:
        async with ctx.lock("index", timeout=0):
            order.append(f"in-{n}")
            if n == 1:
                raise RuntimeError("template missing")

    first = rebuild.enqueue(1)
    rebuild.enqueue(2)
    assert acta_host.tick() == "failed"
    assert holders(ledger) == []
    assert acta_host.tick() == "completed"  # timeout=0: the lock must be free at once
    assert order == ["in-1", "in-2"]
    assert "template missing" in messages(acta_host, first)


def test_a_waiter_gets_the_lock_when_the_holder_releases(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    peer = acta_host.add_worker()
    order: list[str] = []
    about_to_wait = threading.Event()
    outcomes: list[str] = []

    @acta_app.job("sync-account")
    def sync_account(n: int, ctx: SyncJobContext) -> None:
        if n == 1:
            waiter = threading.Thread(target=lambda: outcomes.append(acta_host.tick(peer)))
            with ctx.lock("account-acme", timeout="1m"):
                order.append("holder-in")
                waiter.start()
                about_to_wait.wait()  # the peer's job is at (or in) its lock call
                order.append("holder-out")
            waiter.join()  # a release wakes a waiter in this process; no clock moves
            return
        about_to_wait.set()
        with ctx.lock("account-acme", timeout="1m"):
            order.append("waiter-in")

    sync_account.enqueue(1)
    sync_account.enqueue(2)
    assert acta_host.tick() == "completed"
    assert outcomes == ["completed"]
    assert order == ["holder-in", "holder-out", "waiter-in"]
    assert holders(ledger) == []


def test_a_wait_past_its_timeout_raises_in_the_handler(acta_app: Acta, acta_host: Host) -> None:
    peer = acta_host.add_worker()
    about_to_wait = threading.Event()
    outcomes: list[str] = []
    waited: list[float] = []

    @acta_app.job("sync-account", max_attempts=1)
    def sync_account(n: int, ctx: SyncJobContext) -> None:
        if n == 1:
            waiter = threading.Thread(target=lambda: outcomes.append(acta_host.tick(peer)))
            with ctx.lock("account-acme"):
                waiter.start()
                about_to_wait.wait()
                # Move the test clock until the waiter gives up (heartbeats keep our lease).
                while waiter.is_alive():
                    acta_host.advance("250ms")
            return
        start = ctx.now()
        about_to_wait.set()
        try:
            with ctx.lock("account-acme", timeout="2s"):
                pass
        finally:
            waited.append((ctx.now() - start).total_seconds())

    sync_account.enqueue(1)
    loser = sync_account.enqueue(2)
    assert acta_host.tick() == "completed"
    assert outcomes == ["failed"]
    assert waited[0] >= 2.0
    assert "LockTimeoutError" in messages(acta_host, loser)


def test_a_dead_holders_lock_is_freed_by_recovery(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    doomed = acta_host.add_worker()
    tries: list[str] = []

    @acta_app.job("settle-account", max_attempts=3, backoff="1h")
    def settle(n: int, ctx: SyncJobContext) -> None:
        if n == 1:
            with ctx.lock("account-acme"):
                acta_host.kill(doomed)  # the worker dies inside the critical section
            return
        try:
            with ctx.lock("account-acme", timeout=0):
                tries.append("taken")
        except LockTimeoutError:
            tries.append("held")
            raise

    holder = settle.enqueue(1)
    assert acta_host.tick(doomed) == "killed"
    assert holders(ledger) == [("account-acme", str(holder), 1)]

    settle.enqueue(2)
    assert acta_host.tick() == "rearmed"  # the dead worker's lease has not lapsed yet
    assert tries == ["held"]

    acta_host.advance(doomed.lease + acta_host.worker.heartbeat)  # recovery takes it back
    acta_host.run_until_idle()
    assert tries[:2] == ["held", "taken"]
    assert all(held == 0 for _, _, held in holders(ledger))


def test_a_fenced_zombie_neither_keeps_nor_releases_the_lock(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    zombie = acta_host.add_worker()
    doomed = acta_host.add_worker()
    seen: dict[str, object] = {}
    left = threading.Event()

    @acta_app.job("settle-account", max_attempts=3, backoff="1h")
    def settle(n: int, ctx: SyncJobContext) -> None:
        if n == 2:
            # Another job takes the lock the zombie believes it holds, and dies holding it.
            with ctx.lock("account-acme", timeout=0):
                acta_host.kill(doomed)
            return
        if ctx.execution > 1:
            return
        try:
            with ctx.lock("account-acme"):
                acta_host.pause(zombie)  # SIGSTOP: its lease lapses, recovery takes the job
                acta_host.advance(zombie.lease + acta_host.worker.heartbeat)
                acta_host.tick()  # recovery runs on the healthy worker
                seen["taker_ref"] = settle.enqueue(2)
                seen["taker"] = acta_host.tick(doomed, job=seen["taker_ref"])
                acta_host.resume(zombie)
        except LeaseLostError as exc:  # the zombie's release is refused
            seen["release"] = exc
            raise
        finally:
            left.set()

    zombie_job = settle.enqueue(1)
    acta_host.tick(zombie)
    # The worker gives a run up once it finds its lease lost, without waiting for a sync
    # handler's thread to leave: wait for the handler itself.
    assert left.wait(30)
    taker = seen["taker_ref"]
    assert seen["taker"] == "killed"
    assert isinstance(seen["release"], LeaseLostError)
    # The lock is the taker's, still held (its worker died, its lease has not lapsed yet).
    assert holders(ledger) == [("account-acme", str(taker), 1)]
    assert "write-fenced" in acta_host.event_names(zombie_job)


def test_explain_names_the_locks_a_running_job_holds(acta_app: Acta, acta_host: Host) -> None:
    seen: list[Explanation] = []

    @acta_app.job("post-ledger")
    def post(ctx: SyncJobContext) -> None:
        seen.append(acta_app.ops.explain(ctx.job))  # from inside the run, before the lock
        with ctx.lock("account-acme"), ctx.lock("account-initech"):
            seen.append(acta_app.ops.explain(ctx.job))

    post.enqueue()
    assert acta_host.tick() == "completed"
    before, during = seen
    assert (before.verdict, during.verdict) == (Verdict.EXECUTING, Verdict.EXECUTING)
    assert before.facts["locks_held"] == []
    assert during.facts["locks_held"] == ["account-acme", "account-initech"]
    assert "holds the locks 'account-acme', 'account-initech'" in during.summary


@pytest.mark.parametrize(
    ("key", "timeout", "error", "field"),
    [
        ("", None, InvalidNameError, "key"),
        ("k" * 201, None, InvalidNameError, "key"),
        ("acme\x00", None, InvalidNameError, "key"),
        ("acme", -1, ValidationError, "timeout"),
        ("acme", "soon", ValidationError, "timeout"),
    ],
)
def test_bad_lock_arguments_are_refused_before_any_write(
    acta_app: Acta,
    acta_host: Host,
    ledger: Ledger,
    key: str,
    timeout: object,
    error: type,
    field: str,
) -> None:
    caught: list[BaseException] = []

    @acta_app.job("post-ledger", max_attempts=1)
    def post(n: int, ctx: SyncJobContext) -> None:
        try:
            ctx.lock(key, timeout=timeout)  # type: ignore[arg-type]
        except ValidationError as exc:
            caught.append(exc)

    post.enqueue(1)
    assert acta_host.tick() == "completed"
    assert isinstance(caught[0], error)
    assert caught[0].field == field  # type: ignore[attr-defined]
    assert holders(ledger) == []
