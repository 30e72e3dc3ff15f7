"""Malformed input an attacker or a careless script sends is a 400 naming what was wrong, never
a 500: digits ``int()`` cannot read, instants that leave the calendar when moved to UTC, and a
verb body nested deep enough to exhaust the parser (which is only read once the request passed
its origin checks)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from acta import Acta, JobStatus
from tests.dashboard.conftest import Ledger

ORIGIN = {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
DEEP = b"[" * 5000 + b"]" * 5000
DEEP_OBJECT = b'{"reason": ' + b'{"":' * 2500 + b"1" + b"}" * 2501


@pytest.mark.parametrize(
    ("path", "query", "named"),
    [
        ("jobs", {"limit": "\u00b2"}, "limit"),  # superscript two: isdigit() yet not int()
        ("jobs", {"limit": "\u0663"}, "limit"),  # Arabic-Indic three: int() reads it as 3
        ("jobs", {"limit": "\uff15"}, "limit"),  # fullwidth five
        ("jobs", {"before": "\u00b9\u00b2"}, "before"),
        ("jobs", {"before": "9" * 1000}, "before"),
        ("jobs", {"created_from": "0001-01-01T00:00:00+14:00"}, "created_from"),
        ("jobs", {"created_to": "0001-01-01T00:00:00+00:01"}, "created_to"),
        ("jobs", {"created_from": "9999-12-31T23:59:59-14:00"}, "created_from"),
        ("jobs", {"created_to": "9999-12-31T23:59:59.999999-00:01"}, "created_to"),
        ("jobs", {"created_from": "2026-01-01T00:00:00+99:00"}, "created_from"),
        ("jobs", {"created_from": "\u0662\u0660\u0662\u0666-01-01"}, "created_from"),
        ("tenants", {"limit": "\u00b2"}, "limit"),
        ("alerts", {"include_resolved": "\u00b9"}, "include_resolved"),
    ],
    ids=repr,
)
def test_malformed_filters_are_a_400_naming_the_parameter(
    acta_app: Acta,
    acta_host: object,
    dashboard: Callable[..., TestClient],
    path: str,
    query: dict[str, str],
    named: str,
) -> None:
    client = dashboard()
    answer = client.get(f"/api/{path}", params=query)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith(f"{named}:")
    assert answer.json()["error"].endswith(")")  # and says what is allowed
    page = client.get(f"/{path}", params=query)
    assert page.status_code == 400 and f"{named}:" in page.text


@pytest.mark.parametrize(
    "instant",
    ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00", "9999-12-31T23:59:59.999999Z"],
)
def test_the_calendars_edges_in_utc_are_valid_filters(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient], instant: str
) -> None:
    client = dashboard()
    since = client.get("/api/jobs", params={"created_from": instant})
    until = client.get("/api/jobs", params={"created_to": instant})
    assert since.status_code == 200 and until.status_code == 200, (since.text, until.text)
    assert len(since.json()["jobs"]) + len(until.json()["jobs"]) == 5


def _verb_client(dashboard: Callable[..., TestClient], families: list[str]) -> TestClient:
    client = dashboard(verbs=families)
    client.headers["X-Acta-CSRF"] = client.get("/api/session").json()["csrf"]
    return client


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["array", "object"])
def test_a_deeply_nested_verb_body_is_a_400(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient], body: bytes
) -> None:
    client = _verb_client(dashboard, ["jobs"])
    answer = client.post(
        f"/api/jobs/{populated.failed}/restart",
        content=body,
        headers={**ORIGIN, "Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text
    assert "nested" in answer.json()["error"]
    assert acta_app.get(populated.failed).status is JobStatus.FAILED


@pytest.mark.parametrize(
    "headers",
    [{}, {"Origin": "http://evil.example"}, {**ORIGIN, "X-Acta-CSRF": "0" * 64}],
    ids=["no-origin", "cross-origin", "forged-token"],
)
def test_a_verb_body_is_not_parsed_before_the_csrf_checks(
    acta_app: Acta,
    populated: Ledger,
    dashboard: Callable[..., TestClient],
    headers: dict[str, str],
) -> None:
    client = _verb_client(dashboard, ["jobs"])
    if "X-Acta-CSRF" in headers:
        client.headers["X-Acta-CSRF"] = headers["X-Acta-CSRF"]
    answer = client.post(
        f"/api/jobs/{populated.failed}/restart",
        content=DEEP,
        headers={**headers, "Content-Type": "application/json"},
    )
    assert answer.status_code == 403, answer.text
    assert acta_app.get(populated.failed).status is JobStatus.FAILED


def test_a_form_verb_without_a_cookie_is_refused_before_its_body_is_read(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["jobs"])  # never loaded a page: no session cookie
    answer = client.post(
        f"/api/jobs/{populated.failed}/restart",
        content=b"csrf=" + b"%FF" * 100,
        headers={**ORIGIN, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 403 and "cookie" in answer.text
    assert acta_app.get(populated.failed).status is JobStatus.FAILED


@pytest.mark.parametrize(
    "at",
    ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "\u0662\u0660\u0662\u0666-01-01"],
)
def test_a_reschedule_instant_out_of_range_is_a_400(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient], at: str
) -> None:
    client = _verb_client(dashboard, ["jobs"])
    before = acta_app.get(populated.ready).next_run_at
    answer = client.post(f"/api/jobs/{populated.ready}/reschedule", json={"at": at}, headers=ORIGIN)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith("Refused: at:")
    assert acta_app.get(populated.ready).next_run_at == before


@pytest.mark.parametrize("target", ["\u00b2", "\u0663", "1" * 19])
def test_an_alert_id_that_is_not_ascii_digits_is_a_400(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient], target: str
) -> None:
    client = _verb_client(dashboard, ["alerts"])
    answer = client.post(f"/api/alerts/{target}/acknowledge", json={}, headers=ORIGIN)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith("Refused: alert:")


def test_a_tenant_version_that_is_not_ascii_digits_is_a_400(
    acta_app: Acta, acta_host: object, dashboard: Callable[..., TestClient]
) -> None:
    client = _verb_client(dashboard, ["tenants"])
    for version in ("\u00b2", "\u0663"):
        answer = client.post("/api/tenants/acme/suspend", json={"version": version}, headers=ORIGIN)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"].startswith("Refused: version:")


def test_a_session_cookie_that_is_not_ascii_is_refused_not_a_crash(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = _verb_client(dashboard, ["jobs"])
    client.cookies.clear()
    cookie = ("acta_dashboard_session=" + "\u00e9" * 30).encode("latin-1")
    answer = client.post(
        f"/api/jobs/{populated.failed}/restart", json={}, headers={**ORIGIN, "Cookie": cookie}
    )
    assert answer.status_code == 403, answer.text
    assert acta_app.get(populated.failed).status is JobStatus.FAILED


@pytest.mark.parametrize("length", ["9" * 5000, "16385", "-1", "\u00b2"])
def test_a_content_length_beyond_the_bound_is_a_413_not_a_crash(
    acta_app: Acta, acta_host: object, dashboard: Callable[..., TestClient], length: str
) -> None:
    answer = dashboard().get("/api/overview", headers={"Content-Length": length.encode()})
    assert answer.status_code == 413, answer.text
