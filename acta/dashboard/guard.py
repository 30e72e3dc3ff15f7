"""The gate every request passes before any page or endpoint: size, origin of the request,
authorization, and the security headers on every answer.

Local-only (the default) needs both a loopback peer and a Host that names this machine
(``localhost``, ``127.0.0.1`` or ``[::1]``, any port): the second check defeats DNS
rebinding, where a remote page points its own name at 127.0.0.1. Forwarding headers
(``Forwarded``, ``X-Forwarded-*``, ``X-Real-IP``, ``Via`` and the other client-naming headers
proxies and CDNs add) are believed only from a trusted proxy; from anyone else any one of them
refuses a local-only request, because a local reverse proxy forwarding remote traffic would
otherwise look local. From a trusted proxy, the client is what its headers establish
(acta.dashboard.forwarding); when they establish nobody, a local-only request is refused too,
and every host name the request carries must name this machine.
"""

from __future__ import annotations

import inspect
import ipaddress
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse

from acta.dashboard.config import LOCAL_ACTOR, DashboardConfig
from acta.dashboard.forwarding import establish

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_QUERY = 2048
"""Bytes of query string a request may carry; filters never need more."""
MAX_BODY = 16 * 1024
"""Bytes of body a verb may carry."""

_LOCAL_HOST = re.compile(r"^(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$", re.IGNORECASE)
_FORWARDING = frozenset(
    {
        b"forwarded",
        b"x-forwarded",
        b"x-real-ip",
        b"via",
        b"x-client-ip",
        b"client-ip",
        b"true-client-ip",
        b"cf-connecting-ip",
        b"fastly-client-ip",
        b"x-cluster-client-ip",
        b"x-original-forwarded-for",
        b"x-proxyuser-ip",
    }
)
"""Headers a proxy adds to say it forwarded the request, besides every ``X-Forwarded-*``."""

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


class Guard:
    """ASGI middleware: refuses what the configuration does not allow, stamps headers."""

    def __init__(self, app: ASGIApp, config: DashboardConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # The dashboard has no websockets: nothing unguarded may reach the app.
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan
            return

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0] != b"cache-control"]
                message["headers"] = headers + SECURITY_HEADERS
            await send(message)

        refusal = await self._refusal(scope)
        if refusal is not None:
            status, text = refusal
            await PlainTextResponse(text, status_code=status)(scope, receive, stamped)
            return
        await self.app(scope, receive, stamped)

    async def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        if len(scope.get("query_string", b"")) > MAX_QUERY:
            return 414, f"The query string is longer than {MAX_QUERY} bytes."
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        length = headers.get(b"content-length", b"0")
        # Length before int(): Python refuses to read an int of more than 4300 digits.
        if not length.isdigit() or len(length) > 9 or int(length) > MAX_BODY:
            return 413, f"A request body may hold at most {MAX_BODY} bytes."
        raw = scope.get("headers", [])
        peer = _ip((scope.get("client") or ("", 0))[0])
        trusted = peer is not None and any(peer in net for net in self.config.trusted_proxies)
        client, host = peer, headers.get(b"host", b"").decode("latin-1")
        hosts, problem, https = [host], None, scope.get("scheme") == "https"
        names = {k.lower() for k, _ in raw}
        forwarded = any(n in _FORWARDING or n.startswith(b"x-forwarded-") for n in names)
        if trusted:
            told = establish(raw, self.config.trusted_proxies)
            client, problem, https = told.client, told.problem, https or told.https
            host = told.host if told.host is not None else host
            # The proxy's word on the host the browser asked for replaces the Host header,
            # which is then the proxy's own name for its upstream.
            hosts = list(told.named_hosts) or hosts
        state = scope.setdefault("state", {})
        state["acta_client"] = None if client is None else str(client)
        state["acta_host"] = host
        # Secure cookies when the browser's side is HTTPS: the scheme, or a trusted proxy's word.
        state["acta_https"] = https
        if self.config.local_only:
            if forwarded and not trusted:
                return 403, (
                    "This dashboard answers local requests only, and this one carries "
                    "forwarding headers from a peer that is not a trusted proxy."
                )
            if problem is not None:
                return 403, (
                    "This dashboard answers local requests only, and the trusted proxy's "
                    f"headers do not establish the client: {problem}."
                )
            if client is None or not client.is_loopback:
                return 403, "This dashboard answers requests from this machine only."
            if not all(_LOCAL_HOST.match(name.strip()) for name in hosts):
                return 403, (
                    "This dashboard answers only when addressed as localhost, 127.0.0.1 or "
                    "[::1] (the Host header names another site)."
                )
        actor = LOCAL_ACTOR
        if self.config.authorize is not None:
            answer = self.config.authorize(Request(scope))
            if inspect.isawaitable(answer):
                answer = await answer
            if not answer:
                return 403, "Not authorized to use this dashboard."
            actor = str(answer)
        state["acta_actor"] = actor
        return None
