"""Every page and its JSON twin render from a ledger a real worker run produced."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from acta import Acta, JobStatus, SyncJobContext
from acta.dashboard import overview, queries
from acta_testing import Host
from tests.dashboard.conftest import EVIL, Ledger

PAGES = [
    "/",
    "/jobs",
    "/workers",
    "/alerts",
    "/definitions",
    "/schedules",
    "/namespaces",
    "/tenants",
]


def test_every_page_renders_with_the_safety_headers(
    populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    for path in [*PAGES, f"/jobs/{populated.failed}", f"/jobs/{populated.ok}"]:
        page = client.get(path)
        assert page.status_code == 200, path
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        assert "'unsafe-inline'" not in csp
        assert page.headers["x-frame-options"] == "DENY"
        assert "<script>" not in page.text  # no inline script, ever
        assert page.text.count("<script ") == 1  # only the packaged dashboard.js


def test_overview_counts_backlog_workers_alerts_and_throughput(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    data = dashboard().get("/api/overview").json()
    assert data["counts"]["succeeded"] == 3  # greet twice, reconcile
    assert data["counts"]["failed"] == 1
    assert data["counts"]["ready"] == 1
    assert data["throughput"]["succeeded"] == 3
    assert data["throughput"]["failed"] == 1 and data["throughput"]["cancelled"] == 0
    assert [b["job_name"] for b in data["backlog"]] == ["later"]
    assert data["backlog"][0]["due"] == 0
    assert [w["state"] for w in data["workers"]] == ["alive"]
    # The handler's own alert, and the failure incident the failed charge opened.
    assert sorted(a["kind"] for a in data["alerts"]) == ["failure", "manual"]
    verdict = data["verdict"]
    assert verdict["level"] == "action"
    assert "2 open alerts to look at." in verdict["reasons"]
    assert "1 job failed in the last hour." in verdict["reasons"]
    page = dashboard().get("/")
    assert 'data-testid="count-failed" data-count="failed">1<' in page.text
    assert 'data-testid="health-verdict" data-level="action"' in page.text
    assert page.text.count('class="bad"') == 60  # one failure bar per minute of the hour


def test_overview_caps_open_counts_and_counts_finished_jobs_in_the_window_only(
    acta_app: Acta,
    acta_host: Host,
    dashboard: Callable[..., TestClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A cap of 5 stands in for 10,000: the reads ask for one row past it, the page says "5+".
    monkeypatch.setattr(queries, "COUNT_CAP", 5)
    monkeypatch.setattr(overview, "COUNT_CAP", 5)

    @acta_app.job("tick")
    def tick(n: int) -> int:
        return n

    @acta_app.job("tock")
    def tock(n: int) -> int:
        return n

    for n in range(3):
        tick.enqueue(n)
    acta_host.run_until_idle()  # 3 succeeded, now
    acta_host.advance("2h")  # ... and out of the window
    tick.enqueue(99)
    acta_host.run_until_idle()  # 1 succeeded within the window
    for n in range(7):
        tick.enqueue(n)  # 7 ready and due: past the cap
    for n in range(5):
        tock.enqueue(n, delay="1h")  # exactly the cap, none due
    acta_host.stop()  # no live worker: the verdict counts the due jobs, "at least" past the cap
    data = dashboard().get("/api/overview").json()
    assert data["count_cap"] == 5
    assert data["counts"]["ready"] == 5 and data["counts_capped"] == ["ready"]
    assert data["counts_shown"]["ready"] == "5+"
    assert data["counts"]["succeeded"] == 1 == data["throughput"]["succeeded"]
    backlog = {b["job_name"]: b for b in data["backlog"]}
    assert (backlog["tick"]["ready"], backlog["tick"]["due"]) == (5, 5)
    assert backlog["tick"]["capped"] == ["ready", "due"]
    assert (backlog["tock"]["ready"], backlog["tock"]["due"]) == (5, 0)
    assert backlog["tock"]["capped"] == [] and backlog["tock"]["oldest_due_at"] is None
    assert "at least 5 jobs are due and no worker is alive." in data["verdict"]["reasons"]
    page = dashboard().get("/").text
    assert 'data-testid="count-ready" data-count="ready">5+<' in page
    assert 'data-testid="count-succeeded" data-count="succeeded">1<' in page
    assert "finished since" in page


def test_overview_says_all_clear_on_a_quiet_ledger(
    acta_app: Acta, acta_host: object, dashboard: Callable[..., TestClient]
) -> None:
    data = dashboard().get("/api/overview").json()
    assert data["verdict"] == {
        "level": "ok",
        "headline": "All clear: nothing needs action.",
        "reasons": [],
    }


def test_due_jobs_without_a_live_worker_need_action(
    acta_app: Acta, acta_host: object, dashboard: Callable[..., TestClient]
) -> None:
    @acta_app.job("stuck")
    def stuck() -> None:
        return None

    stuck.enqueue()
    data = dashboard().get("/api/overview").json()
    assert data["backlog"][0]["due"] == 1
    # The host's worker registered but has not heartbeaten yet: it is counted as alive only
    # once it has a row; without one the verdict must say no worker is alive.
    if not data["workers"]:
        assert "1 job is due and no worker is alive." in data["verdict"]["reasons"]


def test_jobs_list_filters_and_pages_by_keyset(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    failed = client.get("/api/jobs", params={"status": "failed"}).json()
    assert [j["job_ref"] for j in failed["jobs"]] == [populated.failed]
    by_name = client.get("/api/jobs", params={"job": "greet"}).json()
    assert {j["job_ref"] for j in by_name["jobs"]} == {populated.ok, populated.evil}
    tagged = client.get("/api/jobs", params={"tag": "evil<b>tag</b>"}).json()
    assert [j["job_ref"] for j in tagged["jobs"]] == [populated.evil]
    keyed = client.get("/api/jobs", params={"correlation_key": f"order-{EVIL}"}).json()
    assert [j["job_ref"] for j in keyed["jobs"]] == [populated.evil]
    first = client.get("/api/jobs", params={"limit": "2"}).json()
    assert len(first["jobs"]) == 2 and first["next_before"] is not None
    seen = [j["job_ref"] for j in first["jobs"]]
    after = first["next_before"]
    while after is not None:
        page = client.get("/api/jobs", params={"limit": "2", "before": str(after)}).json()
        seen += [j["job_ref"] for j in page["jobs"]]
        after = page["next_before"]
    everything = client.get("/api/jobs").json()
    assert seen == [j["job_ref"] for j in everything["jobs"]]
    assert len(seen) == 5 and len(set(seen)) == 5
    html = client.get("/jobs", params={"limit": "2"})
    assert 'data-testid="jobs-next"' in html.text and "before=" in html.text


def test_job_page_shows_counters_input_result_timeline_and_explain(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    data = client.get(f"/api/jobs/{populated.failed}").json()
    assert data["status"] == "failed" and data["attempts"] == 2
    assert data["explain"]["verdict"] == "failed"
    assert '"4242"' in data["input"]
    assert "gateway refused 4242" in data["last_error"]
    events = [e["event"] for e in data["events"]]
    assert events[0] == "enqueued" and events[-1] == "failed"
    ok = client.get(f"/api/jobs/{populated.ok}").json()
    assert ok["result"] == '"hello ada"'
    page = client.get(f"/jobs/{populated.failed}")
    assert 'data-testid="job-status">failed<' in page.text
    assert page.text.count('data-testid="event"') == len(events)


def test_definitions_schedules_namespaces_and_workers(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    defs = client.get("/api/definitions").json()["definitions"]
    charge = next(d for d in defs if d["job_name"] == "charge")
    assert charge["max_attempts"] == 2 and charge["paused"] is False
    acta_app.ops.policy.set("charge", expected_version=0, max_attempts=5, reason="flaky bank")
    charge = next(
        d for d in client.get("/api/definitions").json()["definitions"] if d["job_name"] == "charge"
    )
    assert charge["max_attempts"] == 5 and charge["overrides"] == {"max_attempts": 5}
    assert client.get("/api/schedules").json() == {"schedules": []}
    spaces = client.get("/api/namespaces").json()
    assert spaces["current"] == acta_app.namespace
    assert [n["name"] for n in spaces["namespaces"]] == [acta_app.namespace]
    workers = client.get("/api/workers").json()["workers"]
    assert len(workers) == 1 and workers[0]["status"] == "active"


def test_jobs_filter_by_created_time(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    ready = acta_app.get(populated.ready)
    assert ready.status is JobStatus.READY
    after = ready.created_at.isoformat()
    found = dashboard().get("/api/jobs", params={"created_from": after}).json()["jobs"]
    assert [j["job_ref"] for j in found] == [populated.ready]
    before = dashboard().get("/api/jobs", params={"created_to": after}).json()["jobs"]
    assert populated.ready not in [j["job_ref"] for j in before]


def test_job_page_shows_steps_progress_and_variables(
    acta_app: Acta, acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
    @acta_app.job("import-feed")
    def import_feed(url: str, ctx: SyncJobContext) -> int:
        rows = ctx.step("download", lambda: 3)
        ctx.set("cursor", {"page": "<b>2</b>"})
        ctx.set_progress(2, 3, "<i>two of three</i>")
        return int(rows)

    ref = str(import_feed.enqueue("https://example.com/feed"))
    acta_host.run_until_idle()
    client = dashboard()
    data = client.get(f"/api/jobs/{ref}").json()
    assert [(s["step"], s["state"]) for s in data["steps"]] == [("download", "completed")]
    assert [v["name"] for v in data["variables"]] == ["cursor"]
    assert '"<b>2</b>"' in data["variables"][0]["value"]
    assert data["progress"]["done"] == 2 and data["progress"]["total"] == 3
    page = client.get(f"/jobs/{ref}").text
    assert 'data-testid="step-row"' in page and 'data-testid="variable-row"' in page
    assert "&lt;i&gt;two of three&lt;/i&gt;" in page and "<i>two" not in page
    assert "&lt;b&gt;2&lt;/b&gt;" in page
