"""The local-only guard behind a trusted reverse proxy, attacked the way a remote client of a
local proxy would: every forwarding header a proxy may send (RFC 7239 ``Forwarded``,
``X-Forwarded-For``, ``X-Real-IP``), forged, empty, missing, obfuscated or contradicting each
other. When the guard cannot establish the client it refuses pages, the session token and
verbs alike; and a loopback peer that is not a trusted proxy is never local when it forwards.
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from acta import Acta, JobStatus
from acta.dashboard import create_dashboard
from tests.dashboard.conftest import Ledger, local_client

PROXY = ("127.0.0.1", 44000)
"""A reverse proxy on this machine (nginx, Caddy...) that forwards remote traffic."""
SAME_ORIGIN = {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
REMOTE = "203.0.113.9"

Headers = list[tuple[str, str]]

UNESTABLISHED: list[Headers] = [
    [],  # the proxy said nothing about the client
    [("X-Forwarded-For", "")],
    [("X-Forwarded-For", " , ")],
    [("Forwarded", "")],
    [("X-Real-IP", "")],
    [("Forwarded", f"for={REMOTE}")],
    [("Forwarded", f'for="{REMOTE}:4711"')],
    [("Forwarded", 'for="[2001:db8::7]:4711"')],
    [("Forwarded", f"For={REMOTE};proto=https")],
    [("Forwarded", f"for=127.0.0.1, for={REMOTE}")],  # a forged element at the left
    [("Forwarded", f'for=127.0.0.1;by=_proxy, for="{REMOTE}";proto=http')],
    [("Forwarded", "for=unknown")],
    [("Forwarded", "for=_hidden")],
    [("Forwarded", 'for="_hidden:80"')],
    [("Forwarded", "proto=https")],  # an element without for=
    [("Forwarded", 'for="127.0.0.1')],  # unterminated quote
    [("Forwarded", "for=127.0.0.1;for=127.0.0.2")],  # a parameter twice in one element
    [("Forwarded", "for=[::1]")],  # IPv6 must be quoted
    [("Forwarded", "for=localhost")],
    [("Forwarded", "for=127.0.0.1 garbage")],
    [("X-Real-IP", REMOTE)],
    [("X-Real-IP", "127.0.0.1, 127.0.0.1")],
    [("X-Forwarded-For", "garbage")],
    [("X-Forwarded-For", "127.0.0.1, unknown")],
    [("X-Forwarded-For", f"127.0.0.1, {REMOTE}")],
    # Repeated header lines are one list, in order: the rightmost entry is the last line's.
    [("X-Forwarded-For", REMOTE), ("X-Forwarded-For", "127.0.0.1")],
    [("Forwarded", f"for={REMOTE}"), ("Forwarded", "for=127.0.0.1")],
    # Headers that name different clients: the guard cannot tell which is true.
    [("X-Forwarded-For", "127.0.0.1"), ("Forwarded", f"for={REMOTE}")],
    [("Forwarded", "for=127.0.0.1"), ("X-Forwarded-For", REMOTE)],
    [("X-Forwarded-For", "127.0.0.1"), ("X-Real-IP", REMOTE)],
    [("Forwarded", "for=127.0.0.1"), ("X-Real-IP", REMOTE)],
    [("X-Forwarded-For", "127.0.0.1"), ("X-Forwarded-For", "")],
]

LOCAL_CLIENT: list[Headers] = [
    [("X-Forwarded-For", "127.0.0.1")],
    [("X-Forwarded-For", "127.0.0.1:5000")],
    [("Forwarded", "for=127.0.0.1")],
    [("Forwarded", 'for="127.0.0.1:5000";proto=http;host=localhost')],
    [("Forwarded", 'For="[::1]:5000"')],
    [("Forwarded", 'for="[::1]"')],
    [("X-Real-IP", "127.0.0.1")],
    [("X-Forwarded-For", "127.0.0.1"), ("Forwarded", "for=127.0.0.1")],
    [("X-Forwarded-For", "127.0.0.1"), ("X-Real-IP", "127.0.0.1"), ("Forwarded", "for=127.0.0.1")],
    # Forged entries at the left are the client's own words, never reached.
    [("X-Forwarded-For", "garbage, ::1")],
]


def _proxied(acta_app: Acta, **options: Any) -> TestClient:
    asgi = create_dashboard(acta_app, trusted_proxies=["127.0.0.1"], **options)
    return local_client(asgi, client=PROXY)


@pytest.mark.parametrize("headers", UNESTABLISHED, ids=repr)
def test_a_client_the_proxy_does_not_establish_gets_no_page_and_no_token(
    acta_app: Acta, acta_host: object, headers: Headers
) -> None:
    client = _proxied(acta_app, verbs=["jobs"])
    for path in ("/", "/jobs", "/api/overview", "/api/session"):
        answer = client.get(path, headers=headers)
        assert answer.status_code == 403, (path, answer.text[:200])
        assert "csrf" not in answer.text and "set-cookie" not in answer.headers


@pytest.mark.parametrize("headers", LOCAL_CLIENT, ids=repr)
def test_a_local_client_behind_the_trusted_proxy_is_served(
    acta_app: Acta, acta_host: object, headers: Headers
) -> None:
    client = _proxied(acta_app, verbs=["jobs"])
    assert client.get("/", headers=headers).status_code == 200
    assert len(client.get("/api/session", headers=headers).json()["csrf"]) == 64


def test_verbs_via_the_proxy_are_refused_when_the_client_is_not_established(
    acta_app: Acta, populated: Ledger
) -> None:
    client = _proxied(acta_app, verbs=["jobs"])
    # A token a local browser legitimately holds (same cookie jar), then replayed from afar.
    local = [("X-Forwarded-For", "127.0.0.1")]
    token = client.get("/api/session", headers=local).json()["csrf"]
    assert len(token) == 64
    for headers in UNESTABLISHED:
        sent = [*headers, *SAME_ORIGIN.items(), ("X-Acta-CSRF", token)]
        answer = client.post(f"/api/jobs/{populated.failed}/restart", json={}, headers=sent)
        assert answer.status_code == 403, (headers, answer.text[:200])
    assert acta_app.get(populated.failed).status is JobStatus.FAILED
    sent = [*local, *SAME_ORIGIN.items(), ("X-Acta-CSRF", token)]
    done = client.post(f"/api/jobs/{populated.failed}/restart", json={}, headers=sent)
    assert done.status_code == 200, done.text
    assert acta_app.get(populated.failed).status is JobStatus.READY


def test_a_chain_of_trusted_proxies_is_walked_from_the_right(
    acta_app: Acta, acta_host: object
) -> None:
    asgi = create_dashboard(acta_app, trusted_proxies=["127.0.0.1", "10.0.0.0/8"])
    proxy = local_client(asgi, client=PROXY)
    local = {"Forwarded": 'for="[::1]", for=10.1.2.3;by=127.0.0.1'}
    assert proxy.get("/", headers=local).status_code == 200
    remote = {"Forwarded": f'for="{REMOTE}", for=10.1.2.3'}
    assert proxy.get("/", headers=remote).status_code == 403
    # Every hop trusted: the leftmost is the client (here a local browser behind both).
    assert proxy.get("/", headers={"X-Forwarded-For": "127.0.0.1, 10.1.2.3"}).status_code == 200
    assert proxy.get("/", headers={"X-Forwarded-For": "10.9.9.9, 10.1.2.3"}).status_code == 403


def test_forwarded_host_and_proto_are_read_from_the_clients_element(
    acta_app: Acta, acta_host: object
) -> None:
    client = _proxied(acta_app, verbs=["jobs"])
    rebound = {"Forwarded": "for=127.0.0.1;host=evil.example"}
    assert client.get("/", headers=rebound).status_code == 403
    # X-Forwarded-Host and Forwarded host= naming different sites: refused.
    both = {"Forwarded": "for=127.0.0.1;host=localhost", "X-Forwarded-Host": "evil.example"}
    assert client.get("/", headers=both).status_code == 403
    secure = client.get("/", headers={"Forwarded": "for=127.0.0.1;proto=https;host=localhost"})
    assert secure.status_code == 200 and "secure" in secure.headers["set-cookie"].lower()


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("Forwarded", ""),
        ("Forwarded", "for=unknown"),
        ("X-Real-IP", ""),
        ("X-Forwarded-For", ""),
        ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Port", "443"),
        ("X-Forwarded-Server", "edge"),
        ("X-Original-Forwarded-For", "127.0.0.1"),
        ("X-Client-IP", "127.0.0.1"),
        ("True-Client-IP", "127.0.0.1"),
        ("CF-Connecting-IP", "127.0.0.1"),
        ("X-Cluster-Client-IP", "127.0.0.1"),
        ("Via", "1.1 nginx"),
    ],
)
def test_a_loopback_peer_that_forwards_is_not_local_without_trusted_proxies(
    acta_app: Acta, acta_host: object, header: str, value: str
) -> None:
    client = local_client(create_dashboard(acta_app, verbs=["jobs"]))
    for path in ("/", "/api/session"):
        answer = client.get(path, headers={header: value})
        assert answer.status_code == 403, (path, answer.text[:200])
