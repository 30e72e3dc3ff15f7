"""Durable variables and the progress slot: values a handler keeps across re-entry (a default
until first set, typed reads, compute-once), and the one progress slot that operators read
through the API and jobs_view. Both are written under the run's lease: a run that lost it is
fenced, and its late write changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from acta import Acta, EventCode, JobContext, LeaseLostError, Progress, SyncJobContext
from acta.codec import codecs
from acta_testing import Host
from conformance.conftest import Ledger
from conformance.durable_support import variables_of


@dataclass(frozen=True)
class Cursor:
    table: str
    after_id: int


def progress_columns(ledger: Ledger, ref: object) -> tuple[object, ...]:
    [row] = ledger.rows(
        "SELECT progress_done, progress_total, progress_message, progress_at "
        "FROM {schema}.jobs_view WHERE job_ref = :ref",
        {"ref": str(ref)},
    )
    return tuple(row)


def test_variables_keep_their_values_across_reentry(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    seen: list[tuple[int, object, object, object]] = []

    @acta_app.job("batcher")
    async def batcher(ctx: JobContext) -> int:
        seen.append(
            (ctx.execution, await ctx.get("batch"), await ctx.get("batch", 0), await ctx.get("x"))
        )
        done = int(await ctx.get("batch", 0))
        if done < 2:
            await ctx.set("batch", done + 1)  # the last set wins
            await ctx.sleep("1h", name=f"pause-{done}")
        return done

    ref = batcher.enqueue()
    assert acta_host.tick() == "suspended"
    acta_host.advance("1h")
    assert acta_host.tick() == "suspended"
    acta_host.advance("1h")
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == 2
    assert seen == [(1, None, 0, None), (2, 1, 1, None), (3, 2, 2, None)]
    assert variables_of(ledger, ref) == ["batch"]  # one row, overwritten


def test_get_or_set_computes_once_across_executions(acta_app: Acta, acta_host: Host) -> None:
    computed: list[str] = []
    seen: list[object] = []

    def new_idempotency_key() -> str:
        computed.append("sync")
        return "key-7f3a"

    async def pick_region() -> str:
        computed.append("async")
        return "eu-west"

    @acta_app.job("keyed", max_attempts=3, backoff="1s")
    async def keyed(ctx: JobContext) -> None:
        seen.append(await ctx.get_or_set("key", new_idempotency_key))
        seen.append(await ctx.get_or_set("region", pick_region))
        if ctx.execution < 3:
            raise RuntimeError("downstream not ready")

    keyed.enqueue()
    acta_host.run_until_idle()
    assert computed == ["sync", "async"]
    assert seen == ["key-7f3a", "eu-west"] * 3


def test_typed_variables_decode_to_their_type(acta_app: Acta, acta_host: Host) -> None:
    seen: list[object] = []
    when = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)

    @acta_app.job("typed-vars")
    async def typed(ctx: JobContext) -> None:
        if ctx.execution == 1:
            await ctx.set("cursor", Cursor("orders", 991), type=Cursor)
            await ctx.set("since", when, type=datetime)
            await ctx.sleep("5m")
        seen.append(await ctx.get("cursor", type=Cursor))
        seen.append(await ctx.get("since", type=datetime))
        seen.append(await ctx.get("cursor"))  # untyped: the stored JSON shape
        seen.append(await ctx.get_or_set("cursor", lambda: Cursor("x", 0), type=Cursor))

    typed.enqueue()
    assert acta_host.tick() == "suspended"
    acta_host.advance("5m")
    assert acta_host.tick() == "completed"
    assert seen == [
        Cursor("orders", 991),
        when,
        {"table": "orders", "after_id": 991},
        Cursor("orders", 991),
    ]


def test_sync_handler_variables(acta_app: Acta, acta_host: Host) -> None:
    computed: list[int] = []

    def new_token() -> str:
        computed.append(1)
        return "t-1"

    @acta_app.job("sync-vars", max_attempts=2, backoff="1s")
    def sync_vars(ctx: SyncJobContext) -> str:
        token = ctx.get_or_set("token", new_token)
        ctx.set("seen", ctx.get("seen", 0) + 1)
        if ctx.execution == 1:
            raise RuntimeError("once more")
        return f"{token}/{ctx.get('seen')}"

    ref = sync_vars.enqueue()
    acta_host.run_until_idle()
    assert acta_app.result(ref) == "t-1/2"
    assert computed == [1]


def test_progress_slot_is_readable_by_api_and_sql(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("importer")
    async def importer(ctx: JobContext) -> None:
        await ctx.set_progress(10_000, 90_000, "reading")
        await ctx.sleep("1m")
        await ctx.set_progress(43_000, 90_000)  # the last write wins, message included
        await ctx.sleep("1m")

    ref = importer.enqueue()
    assert acta_app.progress(ref) is None  # never written
    assert progress_columns(ledger, ref) == (None, None, None, None)
    assert acta_host.tick() == "suspended"
    first = acta_app.progress(ref)
    assert first is not None and str(first) == "10,000 of 90,000 (reading)"
    at = acta_host.advance("1m")
    assert acta_host.tick() == "suspended"
    slot = acta_app.progress(ref)
    assert slot == Progress(43_000, 90_000, None, at)
    assert str(slot) == "43,000 of 90,000"
    assert slot.fraction == pytest.approx(43 / 90)
    done, total, message, updated = progress_columns(ledger, ref)
    assert (done, total, message) == (43_000, 90_000, None) and updated is not None


def test_progress_without_a_total(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("crawler")
    async def crawler(ctx: JobContext) -> None:
        await ctx.set_progress(512, message="pages")

    ref = crawler.enqueue()
    assert acta_host.tick() == "completed"
    slot = acta_app.progress(ref)
    assert slot is not None and (slot.done, slot.total, slot.fraction) == (512, None, None)
    assert str(slot) == "512 (pages)"


def test_progress_text_of_large_counts() -> None:
    slot = Progress(1_234_567, 2_000_000, None, datetime(2026, 1, 1, tzinfo=UTC))
    assert str(slot) == "1,234,567 of 2,000,000"


def test_write_of_a_run_that_lost_its_lease_is_fenced(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    zombie = acta_host.worker
    peer = acta_host.add_worker()
    refused: list[str] = []

    @acta_app.job("long-import")
    def long_import(ctx: SyncJobContext) -> str:
        if ctx.execution == 2:  # the peer's run, while the zombie is frozen
            ctx.set_progress(90, 90, "done by the peer")
            ctx.set("owner", "peer")
            return "peer"
        ctx.set_progress(5, 90, "started")
        acta_host.pause(zombie)  # SIGSTOP: no heartbeats, the lease lapses
        acta_host.advance(zombie.lease + peer.heartbeat)
        assert acta_host.tick(peer) == "completed"
        acta_host.resume(zombie)  # SIGCONT: it carries on as if nothing happened
        writes: list[Callable[[], None]] = [
            lambda: ctx.set_progress(50, 90, "zombie"),
            lambda: ctx.set("owner", "zombie"),
        ]
        for write in writes:
            try:
                write()
            except LeaseLostError as exc:
                refused.append(type(exc).__name__)
        return "zombie"

    ref = long_import.enqueue()
    assert acta_host.tick(zombie) == "lease-lost"  # ends at the first refused write...
    zombie.threads.shutdown(wait=True)  # ...while its thread goes on: let it finish
    assert refused == ["LeaseLostError", "LeaseLostError"]
    assert acta_app.result(ref) == "peer"
    slot = acta_app.progress(ref)
    assert slot is not None and (slot.done, slot.message) == (90, "done by the peer")
    [(codec, body)] = ledger.rows(
        "SELECT v.codec, v.body FROM {schema}.variables v "
        "JOIN {schema}.jobs j ON j.id = v.job_id WHERE j.job_ref = :ref AND v.name = 'owner'",
        {"ref": str(ref)},
    )
    assert codecs.by_code(codec).decode(bytes(body)) == "peer"
    fenced = [e for e in acta_host.events(ref) if e.code is EventCode.WRITE_FENCED]
    assert len(fenced) == 2
    assert all(e.worker == zombie.incarnation and e.epoch == 1 for e in fenced)
