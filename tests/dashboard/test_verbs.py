"""Every verb family through the JSON API (token in the X-Acta-CSRF header), each writing the
events the operator surface writes; and a dashboard mounted under a path, links included."""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from acta import Acta, EventCode, JobStatus
from acta.dashboard import create_dashboard
from acta_testing import Host
from tests.dashboard.conftest import Ledger, local_client

ORIGIN = {"Origin": "http://localhost"}


def _api(client: TestClient) -> TestClient:
    """The client with the session's token in the header a script sends it in."""
    session = client.get("/api/session").json()
    client.headers["X-Acta-CSRF"] = session["csrf"]
    client.headers.update(ORIGIN)
    return client


def test_session_endpoint_hands_out_a_token_only_when_verbs_are_on(
    acta_app: Acta, acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
    assert dashboard().get("/api/session").json() == {"csrf": "", "verbs": []}
    on = dashboard(verbs=["jobs", "alerts"]).get("/api/session").json()
    assert len(on["csrf"]) == 64 and on["verbs"] == ["alerts", "jobs"]


def test_job_verbs_cancel_reschedule_restart(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = _api(dashboard(verbs=["jobs"]))
    moved = client.post(f"/api/jobs/{populated.ready}/reschedule", json={"reason": "go"})
    assert moved.status_code == 200, moved.text
    assert moved.json()["status"] == "ready"
    assert acta_app.get(populated.ready).next_run_at <= acta_app.clock.now()
    cancelled = client.post(f"/api/jobs/{populated.ready}/cancel", json={})
    assert cancelled.json() == {
        "ok": True,
        "message": f"Job {populated.ready}: cancelled.",
        "job_ref": populated.ready,
        "status": "cancelled",
    }
    [event] = [e for e in acta_app.events(populated.ready) if e.code is EventCode.CANCELLED]
    assert event.actor == "dashboard@local"
    restarted = client.post(f"/api/jobs/{populated.ready}/restart", json={"reason": "retry"})
    assert restarted.json()["status"] == "ready"
    refused = client.post(f"/api/jobs/{populated.ready}/restart", json={})
    assert refused.status_code == 409 and refused.json()["error"].startswith("Refused:")
    missing = client.post("/api/jobs/job_00000000000000000000000000/cancel", json={})
    assert missing.status_code in (400, 404)
    unknown = client.post(f"/api/jobs/{populated.ready}/explode", json={})
    assert unknown.status_code == 404


def test_definition_verbs_pause_and_resume(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = _api(dashboard(verbs=["definitions"]))
    assert client.post("/api/definitions/later/pause", json={}).json()["changed"] is True
    rows = client.get("/api/definitions").json()["definitions"]
    assert next(d for d in rows if d["job_name"] == "later")["paused"] is True
    assert client.post("/api/definitions/later/pause", json={}).json()["changed"] is False
    assert client.post("/api/definitions/later/resume", json={}).json()["changed"] is True
    off = client.post(f"/api/jobs/{populated.failed}/restart", json={})
    assert off.status_code == 403  # the jobs family stays off
    assert acta_app.get(populated.failed).status is JobStatus.FAILED


def test_alert_verbs_acknowledge_and_resolve(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = _api(dashboard(verbs=["alerts"]))
    [alert, *_] = client.get("/api/alerts").json()["alerts"]
    acked = client.post(f"/api/alerts/{alert['alert_id']}/acknowledge", json={})
    assert acked.json()["acknowledged_by"] == "dashboard@local"
    resolved = client.post(f"/api/alerts/{alert['alert_id']}/resolve", json={"reason": "fixed"})
    assert resolved.json()["resolved_by"] == "dashboard@local"
    assert acta_app.ops.alerts.get(alert["alert_id"]).resolved_by == "dashboard@local"
    bad = client.post("/api/alerts/not-a-number/resolve", json={})
    assert bad.status_code == 400 and "alert" in bad.json()["error"]


def test_schedule_verbs_pause_resume_trigger(
    acta_app: Acta, acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
    @acta_app.job("tick", schedule="1m")
    def tick() -> None:
        return None

    acta_host.add_worker()
    client = _api(dashboard(verbs=["schedules"]))
    [row] = client.get("/api/schedules").json()["schedules"]
    assert (row["job_name"], row["name"], row["paused"]) == ("tick", "default", False)
    assert client.post("/api/schedules/tick/default/pause", json={}).status_code == 200
    assert acta_app.schedules.get("tick").paused is True
    assert client.post("/api/schedules/tick/default/resume", json={}).status_code == 200
    assert acta_app.schedules.get("tick").paused is False
    fired = client.post("/api/schedules/tick/default/trigger", json={})
    assert fired.status_code == 200 and acta_app.schedules.get("tick").triggered_at is not None
    overview = client.get("/api/overview").json()
    assert [s["job_name"] for s in overview["schedules"]] == ["tick"]


def test_mounted_under_a_path_links_and_verbs_stay_inside_it(
    acta_app: Acta, populated: Ledger
) -> None:
    host = Starlette(routes=[Mount("/ops/acta", create_dashboard(acta_app, verbs=["jobs"]))])
    client = local_client(host)
    page = client.get(f"/ops/acta/jobs/{populated.failed}")
    assert page.status_code == 200
    assert 'href="/ops/acta/static/dashboard.css"' in page.text
    assert 'href="/ops/acta/jobs"' in page.text
    assert f'action="/ops/acta/api/jobs/{populated.failed}/restart"' in page.text
    assert client.get("/ops/acta/static/dashboard.js").status_code == 200
    assert "path=/ops/acta/" in page.headers["set-cookie"].lower()
    token = page.text.split('name="acta-csrf" content="')[1].split('"')[0]
    done = client.post(
        f"/ops/acta/api/jobs/{populated.failed}/restart",
        data={"csrf": token, "next": f"/ops/acta/jobs/{populated.failed}"},
        headers=ORIGIN,
    )
    assert done.status_code == 303
    assert done.headers["location"].startswith(f"/ops/acta/jobs/{populated.failed}?")
    # A "next" that leaves the dashboard is not followed.
    cancel = client.post(
        f"/ops/acta/api/jobs/{populated.failed}/cancel", data={"csrf": token}, headers=ORIGIN
    )
    assert cancel.status_code == 303
    away = client.post(
        f"/ops/acta/api/jobs/{populated.failed}/restart",
        data={"csrf": token, "next": "https://evil.example/"},
        headers=ORIGIN,
    )
    assert away.headers["location"].startswith("/ops/acta/?")
