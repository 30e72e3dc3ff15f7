"""The Anvil lab's pieces on real ledgers: a drain with a SIGKILL loses nothing, and the record
says so from the ledger; the page answers only to loopback and its controls work.

Real worker processes and real time (a 0.5 s heartbeat, so a killed worker's lease lapses in
two seconds), hence the ``chaos`` marker; each case takes a few seconds. The judgement is the
ledger's: the record's ``lost`` and ``stuck_leased`` are counted from its rows, and here they are
counted again with a separate connection, so a bug in the lab's own checks cannot hide a loss.
"""

from __future__ import annotations

import http.client
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acta.clock import SystemClock
from anvil.lab import app as lab_app
from anvil.lab import cli
from anvil.lab.bridge import mount_dashboard
from anvil.lab.control import Lab, Options
from anvil.lab.page import CONTROL_HEADER, Page, loopback_host
from anvil.lab.terminal import command, render

pytestmark = pytest.mark.chaos

PG_DSN = os.environ.get("ACTA_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test")
clock = SystemClock()


@pytest.fixture(params=["sqlite", "postgres"])
def provider(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        from acta_testing.schemas import postgres_unavailable

        reason = postgres_unavailable(PG_DSN)
        if reason is not None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"PostgreSQL is required under CI: {reason}")
            pytest.skip(f"PostgreSQL was not run: {reason}")
    return str(request.param)


def _until(done: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``done`` (real processes, real time) until it holds; fail after ``timeout`` s."""
    pause = threading.Event()
    deadline = clock.monotonic() + timeout
    while not done():
        assert clock.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        pause.wait(0.05)


def _count_sqlite(path: Path, query: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(query).fetchone()[0])
    finally:
        conn.close()


def test_a_drain_with_kills_loses_nothing_and_records_it(provider: str, tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    database = tmp_path / "lab.sqlite3"
    argv = [
        "--provider", provider, "--dsn", PG_DSN, "--database", str(database),
        "--jobs", "200", "--workers", "2", "--executors", "4", "--work-ms", "100",
        "--heartbeat", "0.5", "--kill-every", "0.5", "--max-kills", "1", "--seed", "7",
        "--until-drained", "--record", str(out),
    ]  # fmt: skip
    if provider == "sqlite":
        argv.append("--keep")  # so the test can count the rows itself afterwards

    assert cli.main(argv) == 0

    doc = json.loads(out.read_text())
    rec = doc["record"]
    assert rec["jobs"] == 200 and rec["jobs_in_ledger"] == 200
    assert rec["succeeded"] == 200 and rec["lost"] == 0 and rec["stuck_leased"] == 0
    assert rec["kills"] == 1
    assert rec["workers_declared_dead"] >= rec["kills"]
    assert rec["recoveries"] >= 1, "the killed worker held leases that recovery took back"
    assert rec["ok"] is True
    assert rec["profile"] == "buffered"
    # Worker memory is sampled at every progress line (Linux /proc): at least once per worker.
    memory = rec["memory"]["workers"]
    assert memory and all(w["samples"] >= 1 and w["first_kib"] > 0 for w in memory)
    assert {w["worker"] for w in memory} <= {int(n) for n in rec["memory"]["series"]}
    # On PostgreSQL the lab keeps the planner's statistics fresh itself (see Lab.maintain).
    assert rec["vacuum_analyze_runs"] >= (1 if provider == "postgres" else 0)
    assert doc["environment"]["command"].startswith("python -m anvil lab --provider")
    md = out.with_suffix(".md").read_text()
    assert "none lost, nothing stuck leased" in md and "| **lost** (not succeeded) | **0** |" in md
    if provider == "sqlite":
        # Counted again, apart from the lab: every lab job succeeded, nothing holds a lease.
        unfinished = (
            "SELECT count(*) FROM acta_runtime r JOIN acta_definitions d ON d.id = r.definition_id"
            " WHERE d.name = 'lab.work' AND r.status <> 100"
        )
        assert _count_sqlite(database, unfinished) == 0
        leased = "SELECT count(*) FROM acta_runtime WHERE lease_owner IS NOT NULL"
        assert _count_sqlite(database, leased) == 0
        lost = "SELECT count(*) FROM acta_events WHERE code = 30"
        assert _count_sqlite(database, lost) == rec["recoveries"]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    options = Options(provider="sqlite", workdir=tmp_path, executors=4, heartbeat=0.5)
    with Lab(options) as it:
        yield it


@pytest.fixture
def page(lab: Lab) -> Iterator[Page]:
    served = Page(lab).start()
    yield served
    served.close()


def _call(
    page: Page, method: str, path: str, body: object = None, host: str | None = None,
    control: bool = True,
) -> tuple[int, Any]:  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", page.port, timeout=60)
    headers = {"Host": host or f"127.0.0.1:{page.port}", "Content-Type": "application/json"}
    if control:
        headers[CONTROL_HEADER] = "1"
    try:
        payload = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        kind = response.getheader("Content-Type") or ""
        return response.status, json.loads(raw) if "json" in kind else raw.decode()
    finally:
        conn.close()


def test_the_page_answers_only_to_loopback_names(page: Page) -> None:
    assert _call(page, "GET", "/api/state")[0] == 200
    assert _call(page, "GET", "/", host=f"localhost:{page.port}")[0] == 200
    for host in ("evil.example", f"evil.example:{page.port}", "192.168.1.5", "127.0.0.1.nip.io"):
        status, body = _call(page, "GET", "/api/state", host=host)
        assert status == 403 and "127.0.0.1" in body["error"], host
        assert _call(page, "POST", "/api/stop", {}, host=host)[0] == 403
    assert not page.lab.stopped()
    assert page.server.server_address[0] == "127.0.0.1"


def test_a_control_without_the_lab_header_is_refused(page: Page) -> None:
    status, body = _call(page, "POST", "/api/enqueue", {"n": 5}, control=False)
    assert status == 403 and CONTROL_HEADER in body["error"]
    assert page.lab.state()["enqueue"]["asked"] == 0


def test_bad_control_input_is_a_typed_refusal(page: Page) -> None:
    for bad in ({"n": 0}, {"n": "5"}, {"n": True}, {}):
        status, body = _call(page, "POST", "/api/enqueue", bad)
        assert status == 400 and "enqueue count" in body["error"], bad
    status, body = _call(page, "POST", "/api/kill", {"pid": "x"})
    assert status == 400 and "pid" in body["error"]
    assert _call(page, "POST", "/api/kill", {})[0] == 409  # no worker yet
    assert page.lab.state()["enqueue"]["asked"] == 0


def test_the_page_controls_add_enqueue_kill_and_stop(page: Page) -> None:
    lab = page.lab
    status, first = _call(page, "POST", "/api/workers")
    assert status == 200 and lab.registered(first["pid"])
    status, _ = _call(page, "POST", "/api/workers")
    assert status == 200
    assert _call(page, "POST", "/api/enqueue", {"n": 300})[0] == 202

    def state() -> dict[str, Any]:
        return dict(_call(page, "GET", "/api/state")[1])

    _until(lambda: state()["succeeded"] > 0, 60, "the first job to succeed")
    status, killed = _call(page, "POST", "/api/kill", {"pid": first["pid"]})
    assert status == 200 and killed["pid"] == first["pid"]
    _until(lambda: state()["succeeded"] == 300, 120, "the drain")
    _until(lambda: state()["workers_died"] == 1, 60, "recovery to declare the killed worker dead")
    now = state()
    assert now["jobs"] == 300 and now["backlog"] == 0 and now["kills_sent"] == 1
    dead = [w for w in now["workers"] if w["pid"] == first["pid"]]
    assert [w["status"] for w in dead] == ["dead"]
    assert any(f"pid {first['pid']}" in line for line in now["feed"])

    assert _call(page, "POST", "/api/stop")[0] == 200
    assert lab.stopped() and not lab.fleet.live()
    final = state()
    assert {w["status"] for w in final["workers"]} == {"dead", "stopped"}


def test_terminal_commands_and_view(lab: Lab) -> None:
    assert command(lab, "e 1_000")
    lab.wait_enqueued()
    assert command(lab, "k")  # no worker: said in the feed, nothing else happens
    assert command(lab, "bogus")
    text = render(lab.state())
    assert "backlog" in text and "1,000" in text
    assert "no live worker to kill" in text and "unknown command 'bogus'" in text
    assert not command(lab, "q") and lab.stopped()


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:8000", True), ("localhost", True), ("[::1]:80", True), ("LOCALHOST:1", True),
        ("", False), (None, False), ("example.com", False), ("127.0.0.2", False),
        ("localhost.evil.com", False), ("[::2]:80", False),
    ],
)  # fmt: skip
def test_loopback_host(host: str | None, ok: bool) -> None:
    assert loopback_host(host) is ok


def test_the_page_serves_the_acta_dashboard_of_the_lab_ledger(lab: Lab, page: Page) -> None:
    bridge = mount_dashboard(page, lab)
    assert bridge is not None, "acta-jobs[dashboard] is part of the test extras"
    try:
        status, state = _call(page, "GET", "/api/state")
        assert status == 200 and state["mounts"] == ["/dashboard/"]
        status, html = _call(page, "GET", "/dashboard/", control=False)
        assert status == 200 and "<html" in html.lower()
        status, overview = _call(page, "GET", "/dashboard/api/overview", control=False)
        assert status == 200 and "counts" in overview
        # The page's own guard comes first: a rebinding Host never reaches the dashboard.
        assert _call(page, "GET", "/dashboard/", host="evil.example", control=False)[0] == 403
        # Read-only: the dashboard's verbs are not enabled in the lab.
        status, _ = _call(page, "POST", "/dashboard/api/jobs/job_x/cancel", body={}, control=False)
        assert status == 403
    finally:
        bridge.close()


def test_the_lab_workers_take_the_chosen_profile() -> None:
    env = lab_app.worker_env("db", "schema", profile="bulk")
    assert env["ACTA_LAB_PROFILE"] == "bulk"
    assert cli.parser().parse_args(["--profile", "bulk"]).profile == "bulk"
