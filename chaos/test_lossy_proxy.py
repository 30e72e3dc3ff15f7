"""A lossy link, for real: in-process workers serve 300 jobs (max_attempts=1) through a proxy
that drops 2% of PostgreSQL's replies, COMMIT replies included. Every loss is in doubt, and
none may cost a job, a false fenced write or an orphan lease (anvil.lossy holds the checks; its
long form is ``python -m anvil.lossy``). Real time, short heartbeats: a few seconds."""

from __future__ import annotations

import os
import secrets

import pytest

from anvil.lossy import run_lossy

pytestmark = pytest.mark.chaos

PG_DSN = os.environ.get("ACTA_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def test_jobs_through_a_link_dropping_replies_all_succeed_once_each() -> None:
    from acta_testing.schemas import postgres_unavailable

    reason = postgres_unavailable(PG_DSN)
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required under CI: {reason}")
        pytest.skip(f"PostgreSQL was not run: {reason}")
    # A 1 s heartbeat (4 s leases): what this checks is replies lost in doubt, and a CI machine
    # busy with other tests must not turn a slow heartbeat into a real lease loss.
    report = run_lossy(
        300,
        0.02,
        dsn=PG_DSN,
        schema=f"acta_t_chaos_{secrets.token_hex(4)}",
        timeout=45,
        heartbeat=1.0,
    )
    assert report.dropped_replies > 0  # the link did lose replies
    assert report.succeeded == 300 and report.handler_ran == 300
    assert report.failed_without_run == 0
    assert report.fenced_without_loss == 0
    assert report.on_expired_leases == 0
    assert report.seconds < 45
