"""The dashboard's own SQL on MariaDB, whatever ``--acta-provider`` says (tests/dashboard runs
its pages on SQLite and PostgreSQL only): the Gates page's lanes, gates and meters, the
schedules' real firings, and a running job's locks in its explanation.

The server is ``$ACTA_TEST_MARIADB_DSN`` or the local default; without one these tests skip,
and under CI=true a skip is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from acta import Acta, SyncJobContext
from acta.dashboard import create_dashboard
from acta.provider.mariadb.testing import DEFAULT_DSN, MariadbDatabases, MariadbUnavailable
from acta_testing import Host

pytest.importorskip("pymysql")

DSN = os.environ.get("ACTA_TEST_MARIADB_DSN") or DEFAULT_DSN


@pytest.fixture(scope="module")
def databases() -> Iterator[MariadbDatabases]:
    try:
        found = MariadbDatabases(DSN, "mdbdash")
    except MariadbUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"MariaDB must run in CI: {exc}")
        pytest.skip(str(exc))
    yield found
    assert found.finish() == []


@pytest.fixture
def acta_provider(databases: MariadbDatabases, tmp_path: Path) -> Iterator[Any]:
    """This module's ledger is always MariaDB."""
    with databases.ledger(tmp_path) as provider:
        yield provider


def client(app: Acta) -> TestClient:
    return TestClient(
        create_dashboard(app), base_url="http://localhost", client=("127.0.0.1", 51000)
    )


def test_the_gates_page_reads_lanes_gates_and_meters(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("resize", concurrency_limit=2)
    def resize(n: int) -> int:
        return n

    @acta_app.job("send", rate_limit="2/s")
    def send(n: int) -> int:
        return n

    send.enqueue(1)
    resize.enqueue(0)  # a gate is made when a job of its definition first comes to it
    acta_host.run_until_idle()
    head = str(resize.enqueue(1, lane="customer-7", delay="1h"))
    resize.enqueue(2, lane="customer-7", delay="1h")
    data = client(acta_app).get("/api/gates").json()
    [lane] = data["lanes"]
    assert (lane["lane"], lane["head_job_ref"], lane["blocked"]) == ("customer-7", head, 1)
    assert [(g["limit_in_force"], g["held"], g["holders"]) for g in data["gates"]] == [(2, 0, [])]
    [meter] = data["meters"]
    assert (meter["rate"], meter["period_ms"]) == (2, 1000)
    assert meter["next_free_at"] is not None


def test_schedules_show_only_real_firings(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("nightly", schedule="1h")
    def nightly() -> None:
        return None

    dash = client(acta_app)
    acta_host.run_until_idle()
    [armed] = dash.get("/api/schedules").json()["schedules"]
    assert armed["last_fired_at"] is None
    acta_host.advance("1h")
    acta_host.run_until_idle()
    [fired] = dash.get("/api/schedules").json()["schedules"]
    assert fired["last_fired_at"] is not None


def test_explain_names_the_locks_a_running_job_holds(acta_app: Acta, acta_host: Host) -> None:
    seen = []

    @acta_app.job("settle")
    def settle(ctx: SyncJobContext) -> None:
        with ctx.lock("account-b"), ctx.lock("account-a"):
            seen.append(acta_app.ops.explain(ctx.job))

    settle.enqueue()
    acta_host.run_until_idle()
    [during] = seen
    assert during.facts["locks_held"] == ["account-a", "account-b"]


def test_the_jobs_list_marks_slots_and_filters_by_error_text_in_any_case(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("charge", max_attempts=1)
    def charge(card: str) -> None:
        raise RuntimeError(f"Gateway refused {card}")

    @acta_app.job("nightly", schedule="1h")
    def nightly() -> None:
        return None

    failed = str(charge.enqueue("4242"))
    acta_host.run_until_idle()
    dash = client(acta_app)
    rows = dash.get("/api/jobs").json()["jobs"]
    assert {r["job_name"]: r["is_slot"] for r in rows} == {"charge": False, "nightly": True}
    # Case-insensitive, as on SQLite and PostgreSQL, although MariaDB's text compares byte-wise.
    for text in ("GATEWAY refused", "gateway REFUSED 4242"):
        found = dash.get("/api/jobs", params={"error": text}).json()["jobs"]
        assert [r["job_ref"] for r in found] == [failed], text
    assert dash.get("/api/jobs", params={"error": "no such text"}).json()["jobs"] == []


def test_a_schedule_armed_by_a_worker_shows_its_first_firing(
    acta_app: Acta, acta_host: Host
) -> None:
    @acta_app.job("tick", schedule="1h")
    def tick() -> None:
        return None

    acta_host.add_worker()
    dash = client(acta_app)
    assert dash.get("/api/overview").json()["backlog"] == []
    [slot] = dash.get("/api/jobs", params={"job": "tick"}).json()["jobs"]
    assert slot["is_slot"] is True
    assert dash.get("/jobs").status_code == 200
    [never] = dash.get("/api/schedules").json()["schedules"]
    assert dash.get("/schedules").status_code == 200
    assert never["last_fired_at"] is None
    acta_host.advance("1h")
    acta_host.run_until_idle()
    [fired] = dash.get("/api/schedules").json()["schedules"]
    assert fired["last_fired_at"] is not None
