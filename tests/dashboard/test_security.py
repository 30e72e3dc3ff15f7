"""The attacks reliability.md names, each refused: DNS rebinding, forged forwarding headers,
cross-site verbs, stolen or missing CSRF tokens, verbs while disabled, injected HTML, and a
dashboard opened to the network without authorization."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient

from acta import Acta, EventCode, JobStatus
from acta.dashboard import create_dashboard
from acta.errors import ConfigurationError
from tests.dashboard.conftest import Ledger, local_client


def _token(client: TestClient, path: str = "/") -> str:
    page = client.get(path)
    assert page.status_code == 200
    found = re.search(r'<meta name="acta-csrf" content="([0-9a-f]*)">', page.text)
    assert found is not None
    return found.group(1)


def _restart(client: TestClient, ref: str, token: str | None, **headers: str) -> Any:
    form = {"next": f"/jobs/{ref}"}
    if token is not None:
        form["csrf"] = token
    return client.post(f"/api/jobs/{ref}/restart", data=form, headers=headers)


SAME_ORIGIN = {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}


# -- who may ask -------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["localhost", "localhost:8765", "127.0.0.1:80", "[::1]:8765"])
def test_a_local_request_naming_this_machine_is_served(
    acta_app: Acta, acta_host: object, host: str
) -> None:
    client = local_client(create_dashboard(acta_app), base_url=f"http://{host}")
    assert client.get("/api/overview").status_code == 200


@pytest.mark.parametrize(
    "host", ["evil.example", "localhost.evil.example", "127.0.0.1.nip.io", "10.0.0.5", ""]
)
def test_dns_rebinding_host_is_refused(acta_app: Acta, acta_host: object, host: str) -> None:
    client = local_client(create_dashboard(acta_app))
    answer = client.get("/api/overview", headers={"Host": host})
    assert answer.status_code == 403
    assert "localhost, 127.0.0.1 or [::1]" in answer.text


def test_a_remote_peer_is_refused(acta_app: Acta, acta_host: object) -> None:
    client = local_client(create_dashboard(acta_app), client=("203.0.113.7", 4000))
    assert client.get("/").status_code == 403


@pytest.mark.parametrize(
    "header",
    ["X-Forwarded-For", "X-Real-IP", "Forwarded", "X-Forwarded-Host"],
)
def test_forwarding_headers_from_an_untrusted_peer_are_refused(
    acta_app: Acta, acta_host: object, header: str
) -> None:
    client = local_client(create_dashboard(acta_app))
    value = "for=127.0.0.1" if header == "Forwarded" else "127.0.0.1"
    assert client.get("/", headers={header: value}).status_code == 403


def test_a_trusted_proxy_is_believed_about_the_client_and_only_it(
    acta_app: Acta, acta_host: object
) -> None:
    asgi = create_dashboard(acta_app, trusted_proxies=["10.0.0.1"])
    proxy = local_client(asgi, client=("10.0.0.1", 4000))
    assert proxy.get("/", headers={"X-Forwarded-For": "127.0.0.1"}).status_code == 200
    assert proxy.get("/", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 403
    # A forged entry at the left does not help: the rightmost untrusted address counts.
    forged = {"X-Forwarded-For": "127.0.0.1, 203.0.113.9"}
    assert proxy.get("/", headers=forged).status_code == 403
    other = local_client(asgi, client=("10.0.0.2", 4000))
    assert other.get("/", headers={"X-Forwarded-For": "127.0.0.1"}).status_code == 403


def test_opening_it_to_the_network_without_authorization_refuses_to_start(
    acta_app: Acta,
) -> None:
    with pytest.raises(ConfigurationError, match="local_only=False needs an authorize"):
        create_dashboard(acta_app, local_only=False)
    with pytest.raises(ConfigurationError, match="unknown family reboot"):
        create_dashboard(acta_app, verbs=["jobs", "reboot"])
    with pytest.raises(ConfigurationError, match="trusted_proxies"):
        create_dashboard(acta_app, trusted_proxies=["not-an-address"])


def test_authorization_decides_and_names_the_actor(acta_app: Acta, populated: Ledger) -> None:
    def authorize(request: Any) -> str | None:
        user = request.headers.get("x-user")
        return f"ops:{user}" if user == "ada" else None

    asgi = create_dashboard(acta_app, local_only=False, authorize=authorize, verbs=["jobs"])
    remote = TestClient(
        asgi,
        base_url="https://dash.example.com",
        client=("203.0.113.7", 4000),
        follow_redirects=False,
    )
    assert remote.get("/").status_code == 403
    remote.headers["x-user"] = "ada"
    token = _token(remote)
    answer = _restart(remote, populated.failed, token, Origin="https://dash.example.com")
    assert answer.status_code == 303
    [restarted] = [e for e in acta_app.events(populated.failed) if e.code is EventCode.RESTARTED]
    assert restarted.actor == "ops:ada"


# -- verbs -------------------------------------------------------------------------------


def test_verbs_are_off_by_default(acta_app: Acta, populated: Ledger) -> None:
    client = local_client(create_dashboard(acta_app))
    assert _token(client) == ""  # no token is even handed out
    answer = _restart(client, populated.failed, "x", **SAME_ORIGIN)
    assert answer.status_code == 403 and "verbs are off" in answer.text
    assert acta_app.get(populated.failed).status is JobStatus.FAILED
    page = client.get(f"/jobs/{populated.failed}")
    assert 'data-testid="verb-restart"' not in page.text


def test_a_form_verb_with_its_token_restarts_and_records_the_actor(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["jobs"])
    token = _token(client, f"/jobs/{populated.failed}")
    answer = _restart(client, populated.failed, token, **SAME_ORIGIN)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith(f"/jobs/{populated.failed}?notice=")
    assert acta_app.get(populated.failed).status is JobStatus.READY
    [restarted] = [e for e in acta_app.events(populated.failed) if e.code is EventCode.RESTARTED]
    assert restarted.actor == "dashboard@local"
    shown = client.get(answer.headers["location"])
    assert 'data-testid="verb-message"' in shown.text and "restarted" in shown.text


def test_cookie_is_http_only_and_same_site_strict(
    acta_app: Acta, acta_host: object, dashboard: Callable[..., TestClient]
) -> None:
    cookie = dashboard(verbs=["jobs"]).get("/").headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"},
        {"Origin": "http://localhost", "Sec-Fetch-Site": "cross-site"},
        {"Referer": "http://evil.example/page"},
        {},  # neither Origin nor Referer
        {"Origin": "null"},
    ],
)
def test_cross_site_verbs_are_refused_even_with_a_valid_token(
    acta_app: Acta,
    populated: Ledger,
    dashboard: Callable[..., TestClient],
    headers: dict[str, str],
) -> None:
    client = dashboard(verbs=["jobs"])
    token = _token(client)
    answer = _restart(client, populated.failed, token, **headers)
    assert answer.status_code == 403
    assert acta_app.get(populated.failed).status is JobStatus.FAILED


def test_a_missing_or_foreign_token_is_refused(acta_app: Acta, populated: Ledger) -> None:
    asgi = create_dashboard(acta_app, verbs=["jobs"])
    mine, theirs = local_client(asgi), local_client(asgi)
    _token(mine)
    their_token = _token(theirs)
    assert _restart(mine, populated.failed, None, **SAME_ORIGIN).status_code == 403
    assert _restart(mine, populated.failed, their_token, **SAME_ORIGIN).status_code == 403
    # A token from another dashboard (another key) fails too.
    other = local_client(create_dashboard(acta_app, verbs=["jobs"]))
    assert _restart(mine, populated.failed, _token(other), **SAME_ORIGIN).status_code == 403
    # And no session cookie at all.
    bare = local_client(asgi)
    assert _restart(bare, populated.failed, _token(mine), **SAME_ORIGIN).status_code == 403
    assert acta_app.get(populated.failed).status is JobStatus.FAILED


def test_get_never_mutates(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["jobs"])
    answer = client.get(f"/api/jobs/{populated.failed}/restart")
    assert answer.status_code in (404, 405)
    assert acta_app.get(populated.failed).status is JobStatus.FAILED


def test_a_verb_the_operator_surface_refuses_shows_its_message(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["jobs"])
    token = _token(client)
    answer = _restart(client, populated.ready, token, **SAME_ORIGIN)  # not finished yet
    assert answer.status_code == 409
    assert 'data-testid="verb-message"' in answer.text and "Refused" in answer.text
    assert acta_app.get(populated.ready).status is JobStatus.READY


# -- what is rendered --------------------------------------------------------------------


def test_injected_html_is_rendered_inert_everywhere(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["jobs", "alerts"])
    pages = [
        f"/jobs/{populated.evil}",
        f"/jobs/{populated.failed}",
        f"/jobs/{populated.alerted}",
        "/jobs",
        "/alerts",
        "/",
        "/jobs?tag=evil%3Cb%3Etag%3C%2Fb%3E",
    ]
    for path in pages:
        text = client.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text and "<b>tag" not in text
    job = client.get(f"/jobs/{populated.evil}").text
    assert "&lt;script&gt;alert(" in job  # the input, shown as text
    assert html.escape("evil<b>tag</b>") in job
    assert "&lt;script&gt;" in client.get(f"/jobs/{populated.failed}").text
    assert "&lt;script&gt;" in client.get("/alerts").text
    # JSON is served as JSON, never as a page a browser would run.
    api = client.get(f"/api/jobs/{populated.evil}")
    assert api.headers["content-type"] == "application/json"
    assert api.headers["x-content-type-options"] == "nosniff"


# -- bad input ---------------------------------------------------------------------------


def test_unknown_routes_and_refs_are_a_404_page_without_a_trace(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard()
    for path in ["/nope", "/jobs/job_00000000000000000000000000", "/jobs/<script>", "/static/x"]:
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert "Traceback" not in answer.text and "<script>" not in answer.text
    assert client.get("/api/jobs/nope").json()["error"].startswith("no job")


def test_a_crash_is_a_500_page_without_a_trace(
    acta_app: Acta, acta_host: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = TestClient(
        create_dashboard(acta_app),
        base_url="http://localhost",
        client=("127.0.0.1", 5000),
        raise_server_exceptions=False,
    )

    def broken(self: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("acta.dashboard.source.Source.namespaces", broken)
    answer = client.get("/namespaces")
    assert answer.status_code == 500
    assert "secret internals" not in answer.text and "Traceback" not in answer.text


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"status": "exploded"}, "status"),
        ({"limit": "0"}, "limit"),
        ({"limit": "abc"}, "limit"),
        ({"before": "-3"}, "before"),
        ({"created_from": "yesterday"}, "created_from"),
        ({"job": "Not A Name"}, "job"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_malformed_filters_are_a_400_naming_the_rule(
    acta_app: Acta,
    acta_host: object,
    dashboard: Callable[..., TestClient],
    query: dict[str, str],
    named: str,
) -> None:
    client = dashboard()
    answer = client.get("/api/jobs", params=query)
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(f"{named}:")
    page = client.get("/jobs", params=query)
    assert page.status_code == 400 and f"{named}:" in page.text


def test_oversized_query_strings_are_refused(
    acta_app: Acta, acta_host: object, dashboard: Callable[..., TestClient]
) -> None:
    answer = dashboard().get("/jobs", params={"tag": "x" * 5000})
    assert answer.status_code == 414


def test_a_crafted_notice_link_shows_nothing(
    acta_app: Acta, populated: Ledger, dashboard: Callable[..., TestClient]
) -> None:
    client = dashboard(verbs=["jobs"])
    page = client.get("/", params={"notice": "Session expired: log in at evil.example"})
    assert "evil.example" not in page.text and 'data-testid="verb-message"' not in page.text
    forged = client.get("/", params={"notice": "Session expired", "sig": "0" * 64})
    assert "Session expired" not in forged.text


def test_the_cookie_is_secure_behind_a_trusted_https_proxy(
    acta_app: Acta, acta_host: object
) -> None:
    asgi = create_dashboard(acta_app, verbs=["jobs"], trusted_proxies=["127.0.0.1"])
    proxied = local_client(asgi).get(
        "/", headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "127.0.0.1"}
    )
    assert "secure" in proxied.headers["set-cookie"].lower()
    direct = local_client(create_dashboard(acta_app, verbs=["jobs"])).get("/")
    assert "secure" not in direct.headers["set-cookie"].lower()


def test_an_unreachable_database_is_a_503_not_the_callers_fault(tmp_path: object) -> None:
    app = Acta("postgresql://postgres@127.0.0.1:1/nowhere", connect_timeout=1)
    client = local_client(create_dashboard(app))
    page = client.get("/")
    assert page.status_code == 503 and "Traceback" not in page.text
    assert client.get("/api/overview").status_code == 503


def test_websockets_are_closed_at_the_gate(acta_app: Acta, acta_host: object) -> None:
    from starlette.websockets import WebSocketDisconnect

    client = local_client(create_dashboard(acta_app), client=("203.0.113.7", 4000))
    with pytest.raises(WebSocketDisconnect), client.websocket_connect("/api/overview"):
        pass
