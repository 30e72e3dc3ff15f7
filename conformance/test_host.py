"""The test host itself: async form, failure reports, and its guard rails."""

from __future__ import annotations

import pytest

from acta import Acta, JobContext, JobStatus
from acta_testing import AsyncHost, Host, HostError
from acta_testing.plugin import chosen_provider

pytest_plugins = ["pytester"]


async def test_async_host_walks_a_retry(acta_app: Acta, acta_async_host: AsyncHost) -> None:
    @acta_app.job("sync-inventory", backoff="10s", max_attempts=2)
    async def sync_inventory(sku: str, ctx: JobContext) -> str:
        if ctx.attempt == 1:
            raise ConnectionError("warehouse API timed out")
        return f"{sku} synced"

    ref = await sync_inventory.enqueue_async("SKU-9")
    assert await acta_async_host.tick() == "rearmed"
    assert await acta_async_host.tick() == "nothing-claimed"
    await acta_async_host.advance("10s")
    assert await acta_async_host.tick() == "completed"
    assert (await acta_async_host.job(ref)).status is JobStatus.SUCCEEDED
    assert await acta_app.result_async(ref) == "SKU-9 synced"
    names = await acta_async_host.event_names(ref)
    assert names.count("execution-started") == 2 and names[-1] == "succeeded"


async def test_async_host_run_until_idle(acta_app: Acta, acta_async_host: AsyncHost) -> None:
    @acta_app.job("nightly-digest")
    async def digest() -> None:
        return None

    refs = [await digest.enqueue_async(delay=f"{h}h") for h in (1, 2, 3)]
    assert await acta_async_host.run_until_idle() == 3
    for ref in refs:
        assert (await acta_async_host.job(ref)).status is JobStatus.SUCCEEDED
    assert acta_async_host.clock.now().hour == 3  # the clock jumped to each due time


def test_run_until_idle_reports_stuck_work(acta_app: Acta, acta_host: Host) -> None:
    orders = acta_app.define("ship-order")  # declared, but no handler in this app
    orders.enqueue()
    with pytest.raises(HostError, match="cannot claim"):
        acta_host.run_until_idle()


def test_sync_host_refuses_calls_from_async_handlers(acta_app: Acta, acta_host: Host) -> None:
    errors: list[str] = []

    @acta_app.job("callback")
    async def callback() -> None:
        try:
            acta_host.advance("1s")
        except HostError as exc:
            errors.append(str(exc))

    callback.enqueue()
    assert acta_host.tick() == "completed"
    assert errors and "async host" in errors[0]


def test_failed_test_report_shows_the_ledger(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        """
        def test_broken(acta_app, acta_host):
            @acta_app.job("explode")
            def explode() -> None:
                raise RuntimeError("kaboom in the handler")

            explode.enqueue()
            acta_host.tick()
            assert acta_host.jobs()[0].status.label == "succeeded"
        """
    )
    # The inner session runs on this session's provider and server.
    options = [f"--acta-provider={chosen_provider(request.config)}"]
    dsn = request.config.getoption("acta_dsn")
    options += [f"--acta-dsn={dsn}"] if dsn else []
    result = pytester.runpytest("-p", "no:cacheprovider", *options)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "acta ledger" in text
    assert "explode ready attempts=1/15" in text
    assert (
        "execution-finished #1 failed (handler-error) RuntimeError: kaboom in the handler" in text
    )
