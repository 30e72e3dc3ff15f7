"""The bulk verbs (restart, cancel, reschedule, purge on a filtered set) and the job verbs added
with them (signal, resume, amend), through the JSON API, on both dialects: the preview counts
what runs, a stale preview or a missing confirmation changes nothing, and every change carries
the dashboard's actor and the reason given."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from acta import Acta, EventCode, JobStatus
from acta.errors import JobNotFoundError
from acta_testing import Host
from tests.dashboard.conftest import Mixed, api

ACTOR = "dashboard@local"


def _events(app: Acta, ref: str, code: EventCode) -> list[object]:
    return [e for e in app.events(ref) if e.code is code]


def test_bulk_restart_runs_what_the_preview_counted(
    acta_app: Acta, mixed: Mixed, dashboard: Callable[..., TestClient]
) -> None:
    client = api(dashboard(verbs=["bulk"]))
    preview = client.get("/api/bulk/restart", params={"status": "failed", "job": "import-feed"})
    assert preview.status_code == 200, preview.text
    assert preview.json()["matched"] == 5
    assert all(acta_app.get(r).status is JobStatus.FAILED for r in mixed.failed)  # a GET
    done = client.post(
        "/api/bulk/restart",
        json={"status": "failed", "job": "import-feed", "expected": "5", "reason": "feeds back"},
    )
    assert done.status_code == 200, done.text
    body = done.json()
    assert (body["changed"], body["skipped"], body["batches"]) == (5, 0, 1)
    assert "5 of 5 jobs restarted in 1 batch" in body["message"]
    for ref in mixed.failed:
        assert acta_app.get(ref).status is JobStatus.READY
        [event] = _events(acta_app, ref, EventCode.RESTARTED)
        assert event.actor == ACTOR  # type: ignore[attr-defined]
        assert "feeds back" in (event.detail or "")  # type: ignore[attr-defined]


def test_a_bulk_verb_refuses_a_stale_preview_and_changes_nothing(
    acta_app: Acta, mixed: Mixed, dashboard: Callable[..., TestClient]
) -> None:
    client = api(dashboard(verbs=["bulk"]))
    stale = client.post("/api/bulk/restart", json={"status": "failed", "expected": "4"})
    assert stale.status_code == 409 and "preview again" in stale.json()["error"]
    missing = client.post("/api/bulk/restart", json={"status": "failed"})
    assert missing.status_code == 400 and "expected" in missing.json()["error"]
    assert all(acta_app.get(r).status is JobStatus.FAILED for r in mixed.failed)


def test_cancel_and_purge_need_their_name_typed(
    acta_app: Acta, acta_host: Host, mixed: Mixed, dashboard: Callable[..., TestClient]
) -> None:
    client = api(dashboard(verbs=["bulk"]))
    unconfirmed = client.post("/api/bulk/cancel", json={"job": "mail", "expected": "2"})
    assert unconfirmed.status_code == 400 and "confirm" in unconfirmed.json()["error"]
    assert all(acta_app.get(r).status is JobStatus.READY for r in mixed.delayed)
    cancelled = client.post(
        "/api/bulk/cancel", json={"job": "mail", "expected": "2", "confirm": "cancel"}
    )
    assert cancelled.status_code == 200 and cancelled.json()["changed"] == 2
    assert all(acta_app.get(r).status is JobStatus.CANCELLED for r in mixed.delayed)
    acta_host.advance("1s")  # purge takes jobs finished before now (by default)
    # SQLite keeps the newest job row (its id would be reused): let another job be newest.
    acta_app.definition("audit").enqueue()
    count = client.get("/api/bulk/purge", params={"job": "mail"}).json()["matched"]
    assert count == 2
    wrong = client.post("/api/bulk/purge", json={"job": "mail", "expected": "2", "confirm": "yes"})
    assert wrong.status_code == 400
    purged = client.post(
        "/api/bulk/purge", json={"job": "mail", "expected": "2", "confirm": "purge"}
    )
    assert purged.status_code == 200 and purged.json()["changed"] == 2, purged.json()
    for ref in mixed.delayed:
        with pytest.raises(JobNotFoundError):
            acta_app.get(ref)


def test_bulk_reschedule_brings_delayed_jobs_forward(
    acta_app: Acta, mixed: Mixed, dashboard: Callable[..., TestClient]
) -> None:
    client = api(dashboard(verbs=["bulk"]))
    done = client.post("/api/bulk/reschedule", json={"job": "mail", "expected": "2"})
    assert done.status_code == 200 and done.json()["changed"] == 2
    now = acta_app.clock.now()
    assert all(acta_app.get(r).next_run_at <= now for r in mixed.delayed)


def test_the_preview_page_and_the_jobs_page_offer_the_bulk_verbs(
    mixed: Mixed, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["bulk"])
    listed = client.get("/jobs", params={"status": "failed", "tenant": "acme"})
    assert 'data-testid="bulk-actions"' in listed.text
    assert "/bulk/restart?status=failed&amp;tenant=acme" in listed.text
    page = client.get("/bulk/purge", params={"status": "failed", "tenant": "acme"})
    assert page.status_code == 200
    assert 'data-matched="2"' in page.text and 'name="confirm"' in page.text
    assert 'data-testid="bulk-actions"' not in dashboard(verbs=["jobs"]).get("/jobs").text


def test_signal_resume_and_amend_one_job(
    acta_app: Acta, acta_host: Host, mixed: Mixed, dashboard: Callable[..., TestClient]
) -> None:
    client = api(dashboard(verbs=["jobs"]))
    assert acta_app.get(mixed.waiting).status is JobStatus.SUSPENDED
    sent = client.post(
        f"/api/jobs/{mixed.waiting}/signal", json={"name": "approved", "payload": '"yes"'}
    )
    assert sent.status_code == 200, sent.text
    assert sent.json()["outcome"] == "released"
    assert acta_app.get(mixed.waiting).status is JobStatus.READY
    [signalled] = _events(acta_app, mixed.waiting, EventCode.SIGNALLED)
    assert signalled.actor == ACTOR  # type: ignore[attr-defined]
    acta_host.run_until_idle()
    assert acta_app.result(mixed.waiting) == "yes"

    assert acta_app.get(mixed.paused).status is JobStatus.PAUSED
    resumed = client.post(f"/api/jobs/{mixed.paused}/resume", json={"reason": "looked"})
    assert resumed.status_code == 200 and resumed.json()["status"] == "ready"
    [event] = _events(acta_app, mixed.paused, EventCode.RESUMED)
    assert event.actor == ACTOR  # type: ignore[attr-defined]
    again = client.post(f"/api/jobs/{mixed.paused}/resume", json={})
    assert again.status_code == 409

    amended = client.post(f"/api/jobs/{mixed.paused}/amend", json={"priority": "7"})
    assert amended.status_code == 200, amended.text
    assert acta_app.get(mixed.paused).priority == 7
    bad = client.post(f"/api/jobs/{mixed.paused}/amend", json={"priority": "high"})
    assert bad.status_code == 400 and "priority" in bad.json()["error"]
    payload = client.post(f"/api/jobs/{mixed.paused}/signal", json={"name": "x", "payload": "{"})
    assert payload.status_code == 400 and "payload" in payload.json()["error"]
