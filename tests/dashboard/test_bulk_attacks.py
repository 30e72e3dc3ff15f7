"""Every verb added for issue 33 (bulk restart, cancel, reschedule, purge; signal, resume and
amend on one job) attacked the ways reliability.md names, on both dialects: no CSRF token, a
token of another session, a foreign Host, a foreign Origin, the family off, and a bulk filter
reaching another namespace or another tenant than the dashboard is scoped to. Each is refused
and the ledger is unchanged afterwards (same statuses, same event count)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient

from acta import Acta
from acta.dashboard import create_dashboard
from tests.dashboard.conftest import ORIGIN, Mixed, api, local_client

BULK = {
    "restart": {"status": "failed", "expected": "5"},
    "cancel": {"job": "mail", "expected": "2", "confirm": "cancel"},
    "reschedule": {"job": "mail", "expected": "2"},
    "purge": {"status": "failed", "expected": "5", "confirm": "purge"},
}
JOB_VERBS = {
    "signal": ("waiting", {"name": "approved"}),
    "resume": ("paused", {}),
    "amend": ("paused", {"priority": "9"}),
}
VERBS = [f"bulk/{v}" for v in BULK] + [f"jobs/{v}" for v in JOB_VERBS]


def _target(verb: str, mixed: Mixed) -> tuple[str, dict[str, str]]:
    family, name = verb.split("/")
    if family == "bulk":
        return f"/api/bulk/{name}", dict(BULK[name])
    attr, body = JOB_VERBS[name]
    return f"/api/jobs/{getattr(mixed, attr)}/{name}", dict(body)


def _ledger(app: Acta, mixed: Mixed) -> list[Any]:
    """What an attack must leave as it was: every job's status, priority and event count."""
    refs = [*mixed.failed, *mixed.delayed, mixed.waiting, mixed.paused]
    return [(app.get(r).status, app.get(r).priority, len(app.events(r))) for r in refs]


def _on(acta_app: Acta, **options: Any) -> TestClient:
    return local_client(create_dashboard(acta_app, verbs=["bulk", "jobs"], **options))


@pytest.mark.parametrize("verb", VERBS)
def test_an_honest_request_passes_so_the_refusals_below_mean_something(
    acta_app: Acta, mixed: Mixed, verb: str
) -> None:
    path, body = _target(verb, mixed)
    done = api(_on(acta_app)).post(path, json=body)
    assert done.status_code == 200, done.text


@pytest.mark.parametrize("verb", VERBS)
def test_without_a_csrf_token_nothing_happens(acta_app: Acta, mixed: Mixed, verb: str) -> None:
    before = _ledger(acta_app, mixed)
    client = _on(acta_app)
    client.get("/")  # the session cookie, but no token sent
    path, body = _target(verb, mixed)
    assert client.post(path, json=body, headers=ORIGIN).status_code == 403
    assert client.post(path, data=body, headers=ORIGIN).status_code == 403  # as a form
    assert _ledger(acta_app, mixed) == before


@pytest.mark.parametrize("verb", VERBS)
def test_a_token_of_another_session_is_refused(acta_app: Acta, mixed: Mixed, verb: str) -> None:
    before = _ledger(acta_app, mixed)
    asgi = create_dashboard(acta_app, verbs=["bulk", "jobs"])
    stolen = local_client(asgi).get("/api/session").json()["csrf"]
    client = local_client(asgi)
    client.get("/")
    path, body = _target(verb, mixed)
    headers = {**ORIGIN, "X-Acta-CSRF": stolen}
    assert client.post(path, json=body, headers=headers).status_code == 403
    assert client.post(path, data={**body, "csrf": stolen}, headers=ORIGIN).status_code == 403
    assert _ledger(acta_app, mixed) == before


@pytest.mark.parametrize("verb", VERBS)
def test_a_foreign_host_or_origin_is_refused(acta_app: Acta, mixed: Mixed, verb: str) -> None:
    before = _ledger(acta_app, mixed)
    client = api(_on(acta_app))
    path, body = _target(verb, mixed)
    rebound = client.post(path, json=body, headers={"Host": "evil.example"})
    assert rebound.status_code == 403
    cross = client.post(path, json=body, headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403
    site = client.post(path, json=body, headers={"Sec-Fetch-Site": "cross-site"})
    assert site.status_code == 403
    assert _ledger(acta_app, mixed) == before


@pytest.mark.parametrize("verb", VERBS)
def test_with_the_family_off_nothing_happens(
    acta_app: Acta, mixed: Mixed, dashboard: Callable[..., TestClient], verb: str
) -> None:
    before = _ledger(acta_app, mixed)
    family = verb.split("/")[0]
    other = "jobs" if family == "bulk" else "bulk"
    path, body = _target(verb, mixed)
    for client in (api(dashboard()), api(dashboard(verbs=[other, "alerts"]))):
        refused = client.post(path, json=body)
        assert refused.status_code == 403 and "verbs are off" in refused.json()["error"]
    assert _ledger(acta_app, mixed) == before


def test_the_bulk_preview_is_off_with_its_family(
    mixed: Mixed, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["jobs"])
    assert client.get("/api/bulk/restart", params={"status": "failed"}).status_code == 403
    assert client.get("/bulk/restart", params={"status": "failed"}).status_code == 403


@pytest.mark.parametrize("verb", list(BULK))
def test_a_bulk_filter_naming_another_namespace_is_refused(
    acta_app: Acta, mixed: Mixed, verb: str
) -> None:
    before = _ledger(acta_app, mixed)
    client = api(_on(acta_app))
    path, body = _target(f"bulk/{verb}", mixed)
    refused = client.post(path, json={**body, "namespace": "billing"})
    assert refused.status_code == 403 and "namespace" in refused.json()["error"]
    preview = client.get(path, params={"status": "failed", "namespace": "billing"})
    assert preview.status_code == 403
    assert _ledger(acta_app, mixed) == before


@pytest.mark.parametrize("verb", list(BULK))
def test_a_bulk_filter_naming_another_tenant_than_the_scope_is_refused(
    acta_app: Acta, mixed: Mixed, verb: str
) -> None:
    before = _ledger(acta_app, mixed)
    client = api(_on(acta_app, tenant="globex"))
    path, body = _target(f"bulk/{verb}", mixed)
    refused = client.post(path, json={**body, "tenant": "acme"})
    assert refused.status_code == 403 and "tenant" in refused.json()["error"]
    assert client.get(path, params={"tenant": "acme"}).status_code == 403
    # Without a tenant the scope applies: acme's failed jobs are not in globex's set.
    assert client.get(path, params={"job": "import-feed"}).json()["matched"] == 0
    assert _ledger(acta_app, mixed) == before


def test_a_tenant_scoped_dashboard_neither_shows_nor_changes_other_jobs(
    acta_app: Acta, mixed: Mixed
) -> None:
    before = _ledger(acta_app, mixed)
    client = api(_on(acta_app, tenant="acme"))
    listed = client.get("/api/jobs").json()["jobs"]
    assert sorted(j["job_ref"] for j in listed) == sorted(mixed.acme)
    assert client.get("/api/jobs", params={"tenant": "globex"}).status_code == 403
    assert client.get(f"/api/jobs/{mixed.paused}").status_code == 404
    for verb in JOB_VERBS:
        path, body = _target(f"jobs/{verb}", mixed)
        assert client.post(path, json=body).status_code == 404
    assert _ledger(acta_app, mixed) == before
