"""Calling a handler: its arguments, the race against its timeout and the worker's stop
request, the ways a handler can misbehave, and how its input, result and error are turned
into what the ledger stores.

Async handlers run on the event loop; plain functions run in the worker's bounded thread pool.
Python cannot interrupt a thread, so a sync handler that overstays is flagged through its
cancellation and abandoned; its late result is dropped, never written.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import traceback
from collections.abc import Callable
from typing import Any

from acta.codec import codecs, decode_value
from acta.context import JobCancelledError, JobContext
from acta.definition import JobDefinition
from acta.model.rows import Claimed
from acta.runtime.environment import RunEnv
from acta.runtime.run import Run, Stop
from acta.shape import encode_payload, from_data


class HandlerMisbehaved(Exception):
    """A handler ended in a way a run cannot: it raised SystemExit, or cancelled itself
    (raised asyncio.CancelledError without being asked to stop). Recorded as its failure."""


async def _contained(awaitable: Any) -> Any:
    try:
        return await awaitable
    except SystemExit as exc:  # would stop the whole event loop, and every other run with it
        raise HandlerMisbehaved(f"the handler raised SystemExit({exc.code!r})") from None


def _call_contained(target: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    try:
        return target(*args, **kwargs)
    except SystemExit as exc:
        raise HandlerMisbehaved(f"the handler raised SystemExit({exc.code!r})") from None
    except (asyncio.CancelledError, concurrent.futures.CancelledError) as exc:
        # Out of a thread either one reaches the loop as asyncio.CancelledError, which would
        # end the run's task as if acta had cancelled it, with no outcome recorded.
        raise HandlerMisbehaved(
            f"the handler raised {type(exc).__module__}.CancelledError without being asked to stop"
        ) from None


class Interrupted(Exception):
    def __init__(self, reason: Stop) -> None:
        super().__init__(reason.value)
        self.reason = reason


async def invoke(
    env: RunEnv,
    run: Run,
    definition: JobDefinition[Any, Any] | None,
    context: Callable[[], JobContext],
    limit: Any,
    value: Any,
) -> Any:
    """Run the handler, racing its timeout and the worker's stop request. ``context`` builds
    the JobContext, only for handlers that take one."""
    loop = asyncio.get_running_loop()
    # The deadline is fixed before the handler starts: a thread can move the test clock.
    deadline = None if limit is None else env.clock.now() + limit
    handler: asyncio.Future[Any]
    thread: concurrent.futures.Future[Any] | None = None
    if definition is None:  # a system job: ``value`` is its coroutine function
        handler = asyncio.ensure_future(_contained(value(env, context())))
    else:
        args, kwargs = _arguments(definition, value, context)
        target: Callable[..., Any] | None = definition.handler
        assert target is not None, "handler-less definitions are handed back before this"
        if definition.is_async:
            handler = asyncio.ensure_future(_contained(target(*args, **kwargs)))
        else:
            # In the run's context, so a sync handler sees what an async one would (the span of
            # its execution, for one): the pool's threads do not carry it by themselves.
            run_in = contextvars.copy_context().run
            thread = env.threads.submit(run_in, _call_contained, target, args, kwargs)
            handler = asyncio.wrap_future(thread, loop=loop)
    # One future that the first finisher completes: the handler, a stop request, the deadline.
    # (Callbacks, not a task per racer: this runs once per job on the hot path.)
    first: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not first.done():
            first.set_result(None)

    handler.add_done_callback(wake)
    run.watch(wake)
    timer = None
    if deadline is not None:
        timer = asyncio.ensure_future(env.clock.sleep_until(deadline))
        timer.add_done_callback(wake)
    try:
        await first
    finally:
        run.watch(None)
        if timer is not None:
            timer.cancel()
    # The clock decides a timeout, not the order in which the racers' callbacks happened to
    # run: a handler that returns at or after its deadline timed out; its late value is dropped.
    in_time = deadline is None or env.clock.now() < deadline
    if handler.done() and run.stop_reason is None and in_time:
        if handler.cancelled():  # nobody asked it to stop: the handler cancelled itself
            raise HandlerMisbehaved(
                "the handler raised asyncio.CancelledError without being asked to stop"
            )
        return handler.result()
    reason = run.stop_reason or Stop.TIMEOUT
    run.cancellation.cancel(reason.value)
    if not handler.done():
        if thread is not None:
            run.thread = thread
            env.slots.abandon(thread, run)
        handler.cancel()  # interrupts async handlers; a thread keeps running, flagged
    # A timed-out handler's grace runs from its deadline, a stopped one's from now; either
    # way on the worker's clock, so a test clock decides it.
    if reason is Stop.TIMEOUT and deadline is not None:
        since = deadline
    else:
        since = run.grace_from = env.clock.now()
    await env.within_grace(handler, since)
    raise Interrupted(reason)


def _arguments(
    definition: JobDefinition[Any, Any], value: Any, context: Callable[[], JobContext]
) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = [value] if definition.takes_input else []
    kwargs = {definition.context_param: context()} if definition.context_param else {}
    return args, kwargs


def decode_input(definition: JobDefinition[Any, Any], job: Claimed) -> Any:
    # decode_value turns whatever a user codec raises into an InputDecodeError naming the
    # codec: the job then fails for good, and the worker goes on.
    data = decode_value(codecs.by_code(job.input_codec), job.input)
    return from_data(data, definition.input_type, "input")


def encode_result(
    definition: JobDefinition[Any, Any], value: Any, payload_cap: int
) -> tuple[int, bytes] | None:
    if value is None:
        return None
    tp = definition.result_type if definition.result_type is not None else Any
    return encode_payload(value, tp, "result", payload_cap, definition.codec)


# Frames from these places are acta's or the event loop's plumbing, not the user's story.
_PLUMBING = (
    os.path.dirname(__file__) + os.sep,
    os.path.join("concurrent", "futures"),
    os.path.join("asyncio", ""),
)
_FRAMES_KEPT = 8


def describe(exc: BaseException) -> str:
    """The error for the ledger: its type and message, then the handler's own frames."""
    head = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, JobCancelledError):
        return head
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not any(part in frame.filename for part in _PLUMBING)
    ]
    if not frames:
        return head
    shown = "".join(traceback.format_list(frames[-_FRAMES_KEPT:]))
    return f"{head}\nTraceback (most recent call last):\n{shown}"
