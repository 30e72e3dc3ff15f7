"""Durable execution end to end: one handler that steps, sleeps, waits for a signal, fans out
to children and waits for them, walked tick by tick with the test clock (issue 10). The
detailed rules have their own files (test_durable_*.py, test_signals.py, test_children.py...).
"""

from __future__ import annotations

from datetime import timedelta

from acta import Acta, JobContext, JobStatus, SyncJobContext
from acta_testing import Host


def test_a_handler_steps_sleeps_waits_for_a_signal_and_for_its_children(
    acta_app: Acta, acta_host: Host
) -> None:
    seen: list[str] = []

    @acta_app.job("child")
    async def child(n: int) -> int:
        return n * 10

    @acta_app.job("flow")
    async def flow(x: int, ctx: JobContext) -> int:
        a = await ctx.step("a", lambda: seen.append("a") or 1)
        await ctx.set_progress(1, 3, "started")
        await ctx.sleep(timedelta(seconds=30))
        b = await ctx.step("b", lambda: seen.append("b") or 2)
        got = await ctx.wait_signal("go")
        await ctx.spawn_many(child, [1, 2, 3], group="kids")
        outs = await ctx.wait_children()
        return a + b + got + sum(o.result for o in outs)

    ref = flow.enqueue(1)
    assert acta_host.tick() == "suspended"
    assert acta_host.job(ref).status is JobStatus.SUSPENDED
    assert acta_host.tick() == "nothing-claimed"
    acta_host.advance(timedelta(seconds=31))
    assert acta_host.tick() == "suspended"  # now waits for the signal
    assert acta_app.signal(ref, "go", 5) == "released"
    assert acta_host.tick() == "suspended"  # waits for children
    acta_host.run_until_idle()
    assert acta_host.job(ref).status is JobStatus.SUCCEEDED, acta_host.events(ref)
    assert acta_app.result(ref) == 1 + 2 + 5 + 60
    assert seen == ["a", "b"]


def test_a_sync_handler_has_the_same_durable_operations(acta_app: Acta, acta_host: Host) -> None:
    seen: list[str] = []

    @acta_app.job("flow")
    def flow(x: int, ctx: SyncJobContext) -> int:
        a = ctx.step("a", lambda: seen.append("a") or 1)
        ctx.sleep(timedelta(seconds=5))
        v = ctx.get_or_set("v", lambda: 7)
        return a + v

    ref = flow.enqueue(1)
    assert acta_host.tick() == "suspended"
    acta_host.run_until_idle()
    assert acta_app.result(ref) == 8
    assert seen == ["a"]
