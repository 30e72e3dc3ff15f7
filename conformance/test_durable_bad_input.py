"""Bad input to durable execution: names that break the key rule (for steps, variables,
sleeps, signals and children), values the codec cannot store, progress that is not a finite
count, and signals that cannot be delivered. Each is refused where it is made, naming what
was wrong, and leaves no row behind.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from acta import (
    Acta,
    InvalidJobRefError,
    InvalidNameError,
    JobContext,
    JobRef,
    JobStatus,
    PayloadError,
    SignalOutcome,
    ValidationError,
)
from acta_testing import Host
from conformance.conftest import Ledger
from conformance.durable_support import durable_counts, last_error, steps_of, variables_of

BAD_NAMES = {
    "empty": "",
    "too-long": "n" * 201,
    "control-character": "tab\there",
    "nul": "nul\x00here",
    "edge-space": " padded",
}


def nothing() -> int:
    return 1


@pytest.mark.parametrize("bad", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_bad_durable_names_are_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger, bad: str
) -> None:
    refused: dict[str, str] = {}

    @acta_app.job("kid")
    async def kid() -> None:
        return None

    @acta_app.job("careless")
    async def careless(ctx: JobContext) -> None:
        calls: dict[str, Any] = {
            "step": lambda: ctx.step(bad, nothing),
            "get": lambda: ctx.get(bad),
            "set": lambda: ctx.set(bad, 1),
            "get_or_set": lambda: ctx.get_or_set(bad, nothing),
            "sleep": lambda: ctx.sleep("1m", name=bad),
            "wait_signal": lambda: ctx.wait_signal(bad),
            "try_wait_signal": lambda: ctx.try_wait_signal(bad, timeout="1m"),
            "spawn": lambda: ctx.spawn(kid, name=bad),
        }
        for what, call in calls.items():
            try:
                await call()
            except InvalidNameError as exc:
                refused[what] = exc.field

    ref = careless.enqueue()
    before = durable_counts(ledger)
    assert acta_host.tick() == "completed"  # every refusal was caught: nothing suspended
    assert refused == {
        "step": "step name",
        "get": "variable name",
        "set": "variable name",
        "get_or_set": "variable name",
        "sleep": "sleep name",
        "wait_signal": "signal name",
        "try_wait_signal": "signal name",
        "spawn": "child name",
    }
    assert durable_counts(ledger) == before
    assert steps_of(ledger, ref) == [] and variables_of(ledger, ref) == []


def test_a_group_too_long_for_its_child_names_is_refused_by_name(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    # The children would be named "g...g-0" (201 characters): the call is refused at the
    # argument the caller wrote, group, before any child is written.
    refused: list[str] = []

    @acta_app.job("kid")
    async def kid(n: int) -> int:
        return n

    @acta_app.job("spawner")
    async def spawner(ctx: JobContext) -> None:
        try:
            await ctx.spawn_many(kid, [1, 2], group="g" * 199)  # "g...g-0" is 201 characters
        except InvalidNameError as exc:
            refused.append(exc.field)

    spawner.enqueue()
    before = durable_counts(ledger)
    assert acta_host.tick() == "completed"
    assert refused == ["group"]
    assert durable_counts(ledger) == before


def test_names_at_the_length_limit_are_accepted(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    longest = "s" * 200

    @acta_app.job("long-names")
    async def long_names(ctx: JobContext) -> int:
        await ctx.set(longest, 2)
        return int(await ctx.step(longest, nothing)) + int(await ctx.get(longest))

    ref = long_names.enqueue()
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == 3
    assert steps_of(ledger, ref) == [(longest, "completed", False, 1)]


@pytest.mark.parametrize("value", [object(), {"ratio": math.nan}], ids=["object", "nan"])
def test_unencodable_step_result_fails_the_handler(
    acta_app: Acta, acta_host: Host, ledger: Ledger, value: object
) -> None:
    @acta_app.job("odd-result", max_attempts=1)
    async def odd(ctx: JobContext) -> None:
        await ctx.step("measure", lambda: value)

    ref = odd.enqueue()
    assert acta_host.tick() == "failed"
    error, _ = last_error(ledger, ref)
    assert error is not None and "PayloadError: step measure" in error
    assert steps_of(ledger, ref) == []  # nothing half-stored
    assert "step-completed" not in acta_host.event_names(ref)


def test_caught_unencodable_step_result(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    caught: list[PayloadError] = []

    @acta_app.job("careful")
    async def careful(ctx: JobContext) -> str:
        try:
            await ctx.step("handle", lambda: object())
        except PayloadError as exc:
            caught.append(exc)
        return "carried on"

    ref = careful.enqueue()
    assert acta_host.tick() == "completed"
    assert len(caught) == 1 and "step handle" in str(caught[0])
    assert steps_of(ledger, ref) == []


def test_unencodable_variable_is_not_stored(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    refused: list[PayloadError] = []
    after: list[object] = []

    @acta_app.job("odd-variable")
    async def odd(ctx: JobContext) -> None:
        for call in (
            lambda: ctx.set("socket", object()),
            lambda: ctx.set("bad-float", math.inf),
            lambda: ctx.get_or_set("lazy", lambda: {1, 2}),
        ):
            try:
                await call()
            except PayloadError as exc:
                refused.append(exc)
        after.extend([await ctx.get("socket", "unset"), await ctx.get("lazy", "unset")])

    ref = odd.enqueue()
    before = durable_counts(ledger)
    assert acta_host.tick() == "completed"
    assert len(refused) == 3
    assert after == ["unset", "unset"]
    assert variables_of(ledger, ref) == [] and durable_counts(ledger) == before


def test_unencodable_variable_error_names_the_variable(acta_app: Acta, acta_host: Host) -> None:
    fields: list[str] = []

    @acta_app.job("odd-variable")
    async def odd(ctx: JobContext) -> None:
        try:
            await ctx.set("socket", object())
        except PayloadError as exc:
            fields.append(exc.field)

    odd.enqueue()
    assert acta_host.tick() == "completed"
    assert fields == ["variable socket"]


BAD_PROGRESS: list[tuple[str, dict[str, Any], str]] = [
    ("negative", {"done": -1}, "done"),
    ("nan", {"done": math.nan}, "done"),
    ("inf", {"done": math.inf}, "done"),
    ("bool", {"done": True}, "done"),
    ("text", {"done": "12"}, "done"),
    ("negative-total", {"done": 1, "total": -5}, "total"),
    ("nan-total", {"done": 1, "total": math.nan}, "total"),
    ("bool-total", {"done": 1, "total": False}, "total"),
    ("blank-message", {"done": 1, "message": "  "}, "message"),
    ("long-message", {"done": 1, "message": "m" * 1001}, "message"),
]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [(kwargs, field) for _, kwargs, field in BAD_PROGRESS],
    ids=[name for name, _, _ in BAD_PROGRESS],
)
def test_bad_progress_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger, kwargs: dict[str, Any], field: str
) -> None:
    refused: list[ValidationError] = []

    @acta_app.job("bad-progress")
    async def bad_progress(ctx: JobContext) -> None:
        try:
            await ctx.set_progress(**kwargs)
        except ValidationError as exc:
            refused.append(exc)

    ref = bad_progress.enqueue()
    before = durable_counts(ledger)
    assert acta_host.tick() == "completed"
    assert [e.field for e in refused] == [field]
    assert acta_app.progress(ref) is None and durable_counts(ledger) == before


def test_signal_refusals_at_the_call(acta_app: Acta, acta_host: Host, ledger: Ledger) -> None:
    @acta_app.job("approval")
    async def approval(ctx: JobContext) -> object:
        return await ctx.wait_signal("approved")

    ref = approval.enqueue()
    assert acta_host.tick() == "suspended"
    before = durable_counts(ledger)
    with pytest.raises(PayloadError):
        acta_app.signal(ref, "approved", object())
    with pytest.raises(PayloadError):
        acta_app.signal(ref, "approved", {"score": math.nan})
    with pytest.raises(InvalidNameError) as bad_name:
        acta_app.signal(ref, "approved\n", True)
    assert bad_name.value.field == "name"
    with pytest.raises(InvalidJobRefError):
        acta_app.signal("job_not-a-ref", "approved", True)
    assert durable_counts(ledger) == before
    assert acta_host.job(ref).status is JobStatus.SUSPENDED  # still waiting
    assert acta_host.event_names(ref)[-1] == "suspended"  # no signalled event either
    assert acta_app.signal(ref, "approved", {"by": "ops"}) is SignalOutcome.RELEASED
    assert acta_host.tick() == "completed"
    assert acta_app.result(ref) == {"by": "ops"}


def test_undeliverable_signals_are_outcomes(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("quick")
    async def quick() -> str:
        return "done"

    ref = quick.enqueue()
    assert acta_host.tick() == "completed"
    before = durable_counts(ledger)
    stranger = JobRef.new(int(acta_host.clock.now().timestamp() * 1000))
    assert acta_app.signal(stranger, "go", 1) is SignalOutcome.NO_SUCH_JOB
    assert acta_app.signal(ref, "go", 1) is SignalOutcome.JOB_FINISHED
    assert durable_counts(ledger) == before  # neither was stored


def test_unencodable_signal_payload_error_names_the_payload(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("approval")
    async def approval(ctx: JobContext) -> object:
        return await ctx.wait_signal("approved")

    ref = approval.enqueue()
    assert acta_host.tick() == "suspended"
    with pytest.raises(PayloadError) as refused:
        acta_app.signal(ref, "approved", object())
    assert refused.value.field == "payload"
