"""Handlers that misbehave, and operator input that cannot be stored: each ends in a recorded
outcome for its own job, never a stranded job, a failed group commit or a dead worker."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode, JobStatus, Outcome, Reason, ValidationError
from acta_testing import AsyncHost, Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


def _last_error(host: Host, ref: Any) -> str:
    [finished] = [e for e in host.events(ref) if e.code is EventCode.EXECUTION_FINISHED]
    assert finished.outcome is Outcome.FAILED and finished.reason is Reason.HANDLER_ERROR
    assert finished.message is not None
    return finished.message


def test_error_text_no_database_can_store_is_kept_as_visible_escapes(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("parse-upload", max_attempts=3)
    def parse_upload() -> None:
        raise ValueError("bad byte \x00 and half a pair \udc80 in the file")

    ref = parse_upload.enqueue()
    assert acta_host.tick() == "rearmed"  # settled as a retry, not stranded in executing
    job = acta_host.job(ref)
    assert job.status is JobStatus.READY and job.attempts == 1
    assert "bad byte \\x00 and half a pair \\udc80 in the file" in _last_error(acta_host, ref)


def test_a_sync_handler_calling_sys_exit_fails_its_run_and_the_worker_goes_on(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("legacy-script", max_attempts=2)
    def legacy_script() -> None:
        sys.exit(3)

    @acta_app.job("after-it")
    def after_it() -> str:
        return "still running"

    ref = legacy_script.enqueue()
    assert acta_host.tick() == "rearmed"
    assert "SystemExit(3)" in _last_error(acta_host, ref)
    later = after_it.enqueue()
    assert acta_host.tick() == "completed"
    assert acta_app.result(later) == "still running"


@pytest.mark.parametrize("error", [asyncio.CancelledError, concurrent.futures.CancelledError])
def test_a_sync_handler_raising_cancelled_error_fails_its_run(
    acta_app: Acta, acta_host: Host, error: type[BaseException]
) -> None:
    @acta_app.job("waits-on-a-future")
    def waits_on_a_future() -> None:
        raise error()

    ref = waits_on_a_future.enqueue()
    assert acta_host.tick() == "rearmed"  # not stranded in executing
    assert "CancelledError" in _last_error(acta_host, ref)
    assert acta_host.job(ref).attempts == 1


async def test_an_async_handler_that_raises_system_exit_or_cancels_itself_fails_its_run(
    acta_app: Acta, acta_async_host: AsyncHost
) -> None:
    @acta_app.job("exits")
    async def exits() -> None:
        raise SystemExit("bye")

    @acta_app.job("cancels-itself")
    async def cancels_itself() -> None:
        raise asyncio.CancelledError

    first = await exits.enqueue_async()
    assert await acta_async_host.tick() == "rearmed"
    second = await cancels_itself.enqueue_async()
    assert await acta_async_host.tick() == "rearmed"
    for ref, needle in ((first, "SystemExit('bye')"), (second, "CancelledError")):
        job = await acta_app.get_async(ref)
        assert job.status is JobStatus.READY and job.attempts == 1
        finished = [
            e for e in await acta_async_host.events(ref) if e.code is EventCode.EXECUTION_FINISHED
        ]
        assert [e.outcome for e in finished] == [Outcome.FAILED]
        assert needle in (finished[0].message or "")


@pytest.mark.parametrize(
    "reason",
    ["refund \u202eredaeh", "zero\u200bwidth", "bell \x07", "half \ud800 pair", "nul \x00"],
)
def test_a_cancel_reason_that_would_hide_or_break_text_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger, reason: str
) -> None:
    acta_app.define("send-invoice")
    ref = acta_app.enqueue("send-invoice")
    before = ledger.snapshot()
    with pytest.raises(ValidationError, match="reason"):
        acta_app.cancel(ref, reason=reason)
    assert ledger.snapshot() == before
    asked = "customer asked\r\nby phone \U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert acta_app.cancel(ref, reason=asked) is JobStatus.CANCELLED
    assert acta_app.events(ref)[-1].message == asked


def test_acta_system_jobs_cannot_be_cancelled(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    acta_host.tick()  # registers the worker, which enqueues its recovery job
    ref = ledger.value(
        "SELECT j.job_ref FROM {schema}.jobs j JOIN {schema}.definitions d "
        "ON d.id = j.definition_id WHERE d.name = 'sys.recovery'"
    )
    before = ledger.snapshot()
    with pytest.raises(ValidationError, match=r"sys\.recovery"):
        acta_app.cancel(ref)
    assert ledger.snapshot() == before
    assert acta_app.get(ref).status is not JobStatus.CANCELLED
