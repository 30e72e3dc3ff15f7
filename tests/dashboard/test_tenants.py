"""The Tenants page, the jobs' tenant filter and the tenant on the job pages, on both dialects.

Tenant keys, tags and metadata are user data: they reach the page escaped, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from acta import Acta
from acta_testing import Host
from tests.dashboard.conftest import EVIL

EVIL_KEY = "acme <b>bold</b> <script>alert(1)</script>"


@pytest.fixture
def tenanted(acta_app: Acta, acta_host: Host) -> dict[str, str]:
    """Three tenants (one suspended, one with a hostile key) and jobs for two of them."""

    @acta_app.job("invoice")
    def invoice(n: int) -> int:
        return n

    acta_app.tenants.register("acme", tags=["enterprise"], metadata={"plan": "gold"})
    acta_app.tenants.register("globex", metadata={"note": EVIL})
    acta_app.tenants.register(EVIL_KEY, tags=[EVIL])
    refs = {
        "acme_done": str(invoice.enqueue(1, tenant="acme")),
        "evil": str(invoice.enqueue(2, tenant=EVIL_KEY)),
        "none": str(invoice.enqueue(3)),
    }
    acta_host.run_until_idle()
    refs["acme_open"] = str(invoice.enqueue(4, tenant="acme", delay="1h"))
    acta_app.tenants.suspend("globex", reason=f"overdue {EVIL}", actor="billing-ops")
    return refs


def test_tenants_api_lists_every_tenant_by_key_with_its_state(
    tenanted: dict[str, str], dashboard: Callable[..., TestClient]
) -> None:
    data = dashboard().get("/api/tenants").json()
    assert data["next_after"] is None and data["limit"] == 50
    by_key = {t["key"]: t for t in data["tenants"]}
    assert list(by_key) == sorted(["acme", "globex", EVIL_KEY])
    acme, globex = by_key["acme"], by_key["globex"]
    assert acme["open_jobs"] == 1 and acme["suspended"] is False
    assert acme["tags"] == ["enterprise"] and acme["metadata"] == {"plan": "gold"}
    assert acme["version"] >= 1 and acme["suspended_by"] is None
    assert globex["suspended"] is True and globex["suspended_by"] == "billing-ops"
    assert globex["suspend_reason"] == f"overdue {EVIL}" and globex["suspended_at"]
    assert globex["version"] == acme["version"] + 1  # the suspension moved it on


def test_tenants_page_by_keyset_walks_every_tenant_once(
    tenanted: dict[str, str], dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    seen: list[str] = []
    params = {"limit": "1"}
    while True:
        page = client.get("/api/tenants", params=params).json()
        assert len(page["tenants"]) <= 1
        seen += [t["key"] for t in page["tenants"]]
        if page["next_after"] is None:
            break
        params = {"limit": "1", "after": page["next_after"]}
    assert seen == sorted(["acme", "globex", EVIL_KEY])
    html = client.get("/tenants", params={"limit": "2"})
    assert html.status_code == 200
    assert 'data-testid="tenants-next"' in html.text and "after=" in html.text


def test_tenants_page_renders_keys_tags_metadata_and_reasons_inert(
    tenanted: dict[str, str], dashboard: Callable[..., TestClient]
) -> None:
    page = dashboard().get("/tenants")
    assert page.status_code == 200
    assert 'data-testid="nav-tenants"' in page.text
    assert page.text.count('data-testid="tenant-row"') == 3
    assert "<script>alert" not in page.text and "<b>bold</b>" not in page.text
    assert "<img src=x" not in page.text
    assert "acme &lt;b&gt;bold&lt;/b&gt;" in page.text
    assert "billing-ops" in page.text and "suspended" in page.text


def test_an_empty_ledger_has_an_empty_tenants_page(
    acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    assert client.get("/api/tenants").json() == {"tenants": [], "next_after": None, "limit": 50}
    assert 'data-testid="tenants-empty"' in client.get("/tenants").text


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"after": " acme"}, "after"),
        ({"after": "a\x01b"}, "after"),
        ({"after": "x" * 201}, "after"),
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"page": "2"}, "page"),
    ],
)
def test_a_bad_tenants_query_is_a_400_naming_the_parameter(
    acta_host: Host, dashboard: Callable[..., TestClient], query: dict[str, str], field: str
) -> None:
    client = dashboard()
    answer = client.get("/api/tenants", params=query)
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(f"{field}:")
    assert client.get("/tenants", params=query).status_code == 400


def test_jobs_filter_by_tenant_and_show_it(
    tenanted: dict[str, str], dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    acme = client.get("/api/jobs", params={"tenant": "acme"}).json()
    assert [j["job_ref"] for j in acme["jobs"]] == [tenanted["acme_open"], tenanted["acme_done"]]
    assert {j["tenant"] for j in acme["jobs"]} == {"acme"}
    assert acme["filter"] == {"tenant": "acme"}
    open_acme = client.get("/api/jobs", params={"tenant": "acme", "status": "ready"}).json()
    assert [j["job_ref"] for j in open_acme["jobs"]] == [tenanted["acme_open"]]
    evil = client.get("/api/jobs", params={"tenant": EVIL_KEY}).json()
    assert [j["job_ref"] for j in evil["jobs"]] == [tenanted["evil"]]
    # A well-formed key nobody registered matches no job; it is not an error.
    assert client.get("/api/jobs", params={"tenant": "initech"}).json()["jobs"] == []
    everything = {j["job_ref"]: j["tenant"] for j in client.get("/api/jobs").json()["jobs"]}
    assert everything[tenanted["none"]] is None and everything[tenanted["evil"]] == EVIL_KEY
    table = client.get("/jobs", params={"tenant": EVIL_KEY})
    assert table.status_code == 200
    assert table.text.count('data-testid="job-tenant"') == 1
    assert "<script>alert" not in table.text and "<b>bold</b>" not in table.text
    # The filter keeps its value in the form, escaped.
    assert 'value="acme &lt;b&gt;bold&lt;/b&gt;' in table.text


def test_job_page_and_api_show_the_tenant(
    tenanted: dict[str, str], dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    assert client.get(f"/api/jobs/{tenanted['acme_done']}").json()["tenant"] == "acme"
    assert client.get(f"/api/jobs/{tenanted['none']}").json()["tenant"] is None
    page = client.get(f"/jobs/{tenanted['evil']}")
    assert page.status_code == 200 and 'data-testid="job-tenant"' in page.text
    assert "<script>alert" not in page.text and "<b>bold</b>" not in page.text
    assert 'data-testid="job-tenant"' not in client.get(f"/jobs/{tenanted['none']}").text


@pytest.mark.parametrize("bad", [" acme", "acme ", "a\x00b", "a\u200bb", "x" * 201, "e\u0301"])
def test_a_malformed_tenant_filter_is_a_400_with_the_rule(
    acta_host: Host, dashboard: Callable[..., TestClient], bad: str
) -> None:
    client = dashboard()
    answer = client.get("/api/jobs", params={"tenant": bad})
    assert answer.status_code == 400, bad
    assert answer.json()["error"].startswith("tenant:")
    page = client.get("/jobs", params={"tenant": bad})
    assert page.status_code == 400 and "tenant:" in page.text


def test_a_repeated_filter_is_refused_not_folded_into_its_last_value(
    acta_host: Host, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    for path, name in [
        ("/api/jobs?tenant=acme&tenant=globex", "tenant"),
        ("/api/jobs?status=failed&status=ready", "status"),
        ("/api/tenants?after=a&after=b", "after"),
    ]:
        answer = client.get(path)
        assert answer.status_code == 400, path
        assert answer.json()["error"].startswith(f"{name}:"), answer.json()


SLASHED = "eu/acme & co?#"


def test_tenant_verbs_are_off_until_enabled(
    acta_app: Acta, tenanted: dict[str, str], dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["jobs"])
    token = client.get("/api/session").json()["csrf"]
    page = client.get("/tenants")
    assert 'data-testid="verb-suspend"' not in page.text
    refused = client.post(
        "/api/tenants/acme/suspend",
        json={"reason": "no"},
        headers={"X-Acta-CSRF": token, "Origin": "http://localhost"},
    )
    assert refused.status_code == 403 and "verbs=['tenants']" in refused.json()["error"]
    assert acta_app.tenants.get("acme").suspended is False  # type: ignore[union-attr]


def test_tenant_verbs_through_the_api_need_the_token_and_the_current_version(
    acta_app: Acta, tenanted: dict[str, str], dashboard: Callable[..., TestClient]
) -> None:
    acta_app.tenants.register(SLASHED)
    client = dashboard(verbs=["tenants"])
    token = client.get("/api/session").json()["csrf"]
    origin = {"Origin": "http://localhost"}
    path = "/api/tenants/" + quote(SLASHED, safe="/") + "/suspend"
    no_token = client.post(path, json={"reason": "fraud check"}, headers=origin)
    assert no_token.status_code == 403
    headers = {"X-Acta-CSRF": token, **origin}
    done = client.post(path, json={"reason": "fraud check"}, headers=headers)
    assert done.status_code == 200, done.text
    assert done.json() == {
        "ok": True,
        "message": f"Tenant {SLASHED} suspended.",
        "tenant": SLASHED,
        "changed": True,
    }
    stored = acta_app.tenants.get(SLASHED)
    assert stored is not None and stored.suspended and stored.suspended_by == "dashboard@local"
    assert stored.suspend_reason == "fraud check"
    stale = client.post("/api/tenants/acme/suspend", json={"version": "99"}, headers=headers)
    assert stale.status_code == 409 and "version" in stale.json()["error"]
    assert acta_app.tenants.get("acme").suspended is False  # type: ignore[union-attr]
    bad = client.post("/api/tenants/acme/suspend", json={"version": "x"}, headers=headers)
    assert bad.status_code == 400 and bad.json()["error"].startswith("Refused: version:")
    unknown = client.post("/api/tenants/initech/suspend", json={}, headers=headers)
    assert unknown.status_code == 404
    again = client.post(path.replace("/suspend", "/resume"), json={}, headers=headers)
    assert again.json()["changed"] is True
    assert acta_app.tenants.get(SLASHED).suspended is False  # type: ignore[union-attr]
    assert client.post("/api/tenants/acme/delete", json={}, headers=headers).status_code == 404


def test_tenant_buttons_post_a_form_and_come_back_with_the_message(
    acta_app: Acta, tenanted: dict[str, str], dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["tenants"])
    page = client.get("/tenants")
    token = page.text.split('name="acta-csrf" content="')[1].split('"')[0]
    assert 'action="/api/tenants/acme/suspend"' in page.text
    assert 'action="/api/tenants/globex/resume"' in page.text
    # The hostile key is percent-encoded in the form's address, never raw markup.
    assert "acme%20%3Cb%3Ebold%3C/b%3E" in page.text and "<b>bold</b>" not in page.text
    version = acta_app.tenants.get("acme").version  # type: ignore[union-attr]
    done = client.post(
        "/api/tenants/acme/suspend",
        data={"csrf": token, "next": "/tenants", "version": str(version), "reason": "audit"},
        headers={"Origin": "http://localhost"},
    )
    assert done.status_code == 303 and done.headers["location"].startswith("/tenants?")
    back = client.get(done.headers["location"])
    assert back.status_code == 200 and "Tenant acme suspended." in back.text
    acme = acta_app.tenants.get("acme")
    assert acme is not None and acme.suspended and acme.suspend_reason == "audit"
