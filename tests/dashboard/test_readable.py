"""Time people read and lists that answer the first question (issue 33, items 2 and 3): relative
instants with the exact one on hover, human durations, the error and the finished time of a
failed job in the list (and no "next run" for it), the lane and error-text filters."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from starlette.testclient import TestClient

from acta import Acta, Schedule
from acta.dashboard.timefmt import duration, relative, when
from acta_testing import Host
from tests.dashboard.conftest import EVIL, Ledger, Mixed

NOW = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.25, "250 ms"),
        (45, "45 s"),
        (200, "3 min 20 s"),
        (3600, "1 h"),
        (7500, "2 h 5 min"),
        (3 * 86400 + 4 * 3600 + 59, "3 d 4 h"),
    ],
)
def test_durations_read_in_at_most_two_units(seconds: float, said: str) -> None:
    assert duration(seconds) == said


def test_instants_read_relative_to_now_with_the_exact_one_as_title() -> None:
    assert relative(NOW - timedelta(minutes=5, seconds=10), NOW) == "5 min ago"
    assert relative(NOW + timedelta(hours=2, minutes=1), NOW) == "in 2 h"
    assert relative(NOW, NOW) == "just now"
    shown = str(when("2026-01-31T11:55:00.250Z", NOW, "Europe/Paris"))
    assert shown == (
        '<time datetime="2026-01-31T11:55:00.250Z" title="2026-01-31 11:55:00.250 UTC" '
        'data-testid="time" data-zone="Europe/Paris">4 min ago</time>'
    )
    assert str(when(None, NOW)) == "" and str(when("not a time", NOW)) == ""
    assert "&lt;" in str(when(NOW, NOW, EVIL))  # a zone name cannot inject markup


def test_a_failed_job_shows_its_error_and_finish_not_a_next_run(
    populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    row = client.get("/api/jobs", params={"status": "failed"}).json()["jobs"][0]
    assert row["job_ref"] == populated.failed
    assert row["finished_at"] is not None and "gateway refused 4242" in row["last_error"]
    page = client.get("/jobs", params={"status": "failed"}).text
    cell = page.split('data-testid="job-when">')[1].split("</td>")[0]
    assert cell.startswith('<span class="muted">finished</span> <time datetime=')
    assert "gateway refused 4242" in page.split('data-testid="job-error">')[1].split("</td>")[0]
    assert "<script>" not in page  # the error text stays escaped
    job = client.get(f"/jobs/{populated.failed}").text
    assert "<dt>Next run</dt>" not in job and "<dt>Finished</dt>" in job
    assert 'title="' in job and " UTC" in job


def test_error_text_and_lane_filter_the_list_and_stay_in_the_url(
    populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["bulk"])
    found = client.get("/api/jobs", params={"error": "GATEWAY refused"}).json()
    assert [j["job_ref"] for j in found["jobs"]] == [populated.failed]
    assert found["filter"] == {"error": "GATEWAY refused"}
    assert client.get("/api/jobs", params={"error": "no such text"}).json()["jobs"] == []
    assert client.get("/api/jobs", params={"lane": "nowhere"}).json()["jobs"] == []
    page = client.get("/jobs", params={"error": "gateway"}).text
    assert 'value="gateway"' in page
    # Bulk verbs cannot take these two filters: the page says so rather than widen the set.
    assert 'data-testid="bulk-unavailable"' in page and 'data-testid="bulk-actions"' not in page


def test_a_lane_shows_in_the_list_and_filters_it(
    acta_app: Acta, acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
    @acta_app.job("ship")
    def ship(order: str) -> str:
        return order

    laned = str(ship.enqueue("A", lane="customer-7", delay="1h"))
    ship.enqueue("B", delay="1h")
    rows = dashboard().get("/api/jobs", params={"lane": "customer-7"}).json()["jobs"]
    assert [(r["job_ref"], r["lane"]) for r in rows] == [(laned, "customer-7")]


def test_a_cron_schedule_names_its_zone_for_the_script(
    acta_app: Acta, acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
    @acta_app.job("paris-report", schedule=Schedule(cron="0 9 * * *", zone="Europe/Paris"))
    def report() -> None:
        return None

    acta_host.add_worker()
    page = dashboard().get("/schedules").text
    assert 'data-zone="Europe/Paris"' in page
    [row] = dashboard().get("/api/schedules").json()["schedules"]
    assert row["zone"] == "Europe/Paris"


def test_a_job_page_times_are_time_elements(
    mixed: Mixed, dashboard: Callable[..., TestClient]
) -> None:
    page = dashboard().get(f"/jobs/{mixed.waiting}").text
    assert page.count('<time datetime="') >= 3  # created, next run, and each event


def test_the_timeline_shows_each_executions_traceback_once(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    page = dashboard().get(f"/jobs/{populated.failed}").text
    timeline = page.split('data-testid="timeline"')[1]
    events = acta_app.events(populated.failed)
    details = [e for e in events if "Traceback" in (e.message or "") + (e.detail or "")]
    executions = {e.execution for e in details}
    assert len(details) > len(executions)  # the ledger repeats it on several events...
    assert timeline.count("Traceback (most recent call last)") == len(executions)  # ...not the page
    assert 'data-testid="event-detail-above"' in timeline


def test_the_overview_chart_has_axes_units_and_a_legend(
    populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    page = dashboard().get("/").text
    chart = page.split('data-testid="chart"')[1].split("</svg>")[0]
    assert 'aria-labelledby="chart-title chart-desc"' in chart
    assert "jobs per minute" in chart and "succeeded" in chart and "failed" in chart
    assert 'data-testid="chart-y-axis"' in chart and 'data-testid="chart-x-axis"' in chart
    assert "60 min ago" in chart and ">now<" in chart


@pytest.fixture
def ticking(acta_app: Acta, acta_host: Host) -> None:
    """An hourly schedule, armed by a worker and not fired yet."""

    @acta_app.job("tick", schedule="1h")
    def tick() -> None:
        return None

    acta_host.add_worker()


@pytest.mark.usefixtures("ticking")
def test_a_schedule_slot_is_not_backlog_and_never_fired_says_so(
    acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    assert client.get("/api/overview").json()["backlog"] == []  # the slot is not a user job
    [slot] = client.get("/api/jobs", params={"job": "tick"}).json()["jobs"]
    assert slot["is_slot"] is True
    assert 'data-testid="slot-badge"' in client.get("/jobs").text
    [never] = client.get("/api/schedules").json()["schedules"]
    assert never["last_fired_at"] is None  # armed, not fired: the cursor is not a firing
    assert "never" in client.get("/schedules").text
    acta_host.advance("1h")
    acta_host.run_until_idle()
    [fired] = client.get("/api/schedules").json()["schedules"]
    assert fired["last_fired_at"] is not None


def test_the_gates_page_shows_lanes_gates_and_meters(
    acta_app: Acta, acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
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
    client = dashboard()
    data = client.get("/api/gates").json()
    [lane] = data["lanes"]
    assert (lane["lane"], lane["head_job_ref"], lane["blocked"]) == ("customer-7", head, 1)
    assert any(g["limit_in_force"] == 2 for g in data["gates"])
    assert any(m["rate"] == 2 and m["period_ms"] == 1000 for m in data["meters"])
    page = client.get("/gates").text
    assert 'data-testid="nav-gates"' in page and "1 blocked" in page
    assert "2 per 1 s" in page


@pytest.mark.usefixtures("ticking")
def test_definitions_show_retention_and_schedules(dashboard: Callable[..., TestClient]) -> None:
    [row] = [
        d
        for d in dashboard().get("/api/definitions").json()["definitions"]
        if d["job_name"] == "tick"
    ]
    assert row["schedules"] == ["every 1h"]
    page = dashboard().get("/definitions").text
    tick_row = page.split('data-job="tick"')[1].split("</tr>")[0]
    cell = tick_row.split('data-testid="definition-schedules">')[1].split("</td>")[0]
    assert "every 1h" in cell
    assert 'data-testid="definition-retention">7 d<' in tick_row
