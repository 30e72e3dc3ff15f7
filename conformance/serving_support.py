"""Waiting on a worker that serves on its own (``worker.serve``), for the specs that drive one.

Such a worker registers, claims and settles in its database threads while the spec's coroutine
waits on the event loop. Waiting by counting bare loop turns (``asyncio.sleep(0)``) measures
the wrong thing: the turns cost microseconds, hold the GIL the database threads need, and on a
busy machine a fixed count ran out before the worker's first claim had landed (the bulk serving
spec failed that way in CI with every job still ready). So a wait here yields through a thread
hop, during which the loop thread sleeps in ``select`` and the database threads run, and it is
bounded by a hang guard rather than a count: a spec whose condition never holds fails after
``within`` seconds instead of hanging, and one whose condition holds is never cut short.
No test clock moves while waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

HANG_GUARD = 60.0  # seconds; only a broken build ever gets near it


def _nothing() -> None:
    return None


async def turn() -> None:
    """Let every other task and thread run once: a round trip through the default executor."""
    await asyncio.get_running_loop().run_in_executor(None, _nothing)


async def until(
    predicate: Callable[[], Awaitable[bool]],
    what: str = "the condition",
    within: float = HANG_GUARD,
) -> None:
    """Return once ``predicate()`` holds; fail naming ``what`` if it has not after ``within``."""

    async def polled() -> None:
        while not await predicate():
            await turn()

    try:
        await asyncio.wait_for(polled(), within)
    except TimeoutError:
        raise AssertionError(f"{what} never held (waited {within:g} s)") from None


async def never(predicate: Callable[[], Awaitable[bool]], rounds: int = 500) -> bool:
    """True when ``predicate()`` stayed false for ``rounds`` turns (a spec's negative check:
    nothing may happen before the clock moves)."""
    for _ in range(rounds):
        if await predicate():
            return False
        await turn()
    return True
