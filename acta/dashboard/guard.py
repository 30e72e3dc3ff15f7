"""The gate every request passes before any page or endpoint: size, origin of the request,
authorization, and the security headers on every answer.

Local-only (the default) needs both a loopback peer and a Host that names this machine
(``localhost``, ``127.0.0.1`` or ``[::1]``, any port): the second check defeats DNS
rebinding, where a remote page points its own name at 127.0.0.1. Forwarding headers
(``X-Forwarded-For``, ``Forwarded``, ``X-Real-IP``, ``X-Forwarded-Host``) are believed only
from a trusted proxy; from anyone else they refuse a local-only request, because a local
reverse proxy forwarding remote traffic would otherwise look local.
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
_FORWARDING = (b"x-forwarded-for", b"forwarded", b"x-real-ip", b"x-forwarded-host")

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
        if not length.isdigit() or int(length) > MAX_BODY:
            return 413, f"A request body may hold at most {MAX_BODY} bytes."
        peer = _ip((scope.get("client") or ("", 0))[0])
        trusted = peer is not None and any(peer in net for net in self.config.trusted_proxies)
        client, host = peer, headers.get(b"host", b"").decode("latin-1")
        forwarded = [h for h in _FORWARDING if h in headers]
        if trusted and peer is not None:
            client = self._forwarded_client(headers, peer)
            if b"x-forwarded-host" in headers:
                host = headers[b"x-forwarded-host"].decode("latin-1").split(",")[0].strip()
        state = scope.setdefault("state", {})
        state["acta_client"] = None if client is None else str(client)
        state["acta_host"] = host
        # Secure cookies when the browser's side is HTTPS: the scheme, or a trusted proxy's word.
        proto = headers.get(b"x-forwarded-proto", b"").decode("latin-1").strip().lower()
        state["acta_https"] = scope.get("scheme") == "https" or (trusted and proto == "https")
        if self.config.local_only:
            if forwarded and not trusted:
                return 403, (
                    "This dashboard answers local requests only, and this one carries "
                    "forwarding headers from a peer that is not a trusted proxy."
                )
            if client is None or not client.is_loopback:
                return 403, "This dashboard answers requests from this machine only."
            if not _LOCAL_HOST.match(host):
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

    def _forwarded_client(
        self, headers: dict[bytes, bytes], peer: ipaddress.IPv4Address | ipaddress.IPv6Address
    ) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        """The first address right to left in X-Forwarded-For that is not a trusted proxy."""
        chain = headers.get(b"x-forwarded-for", b"").decode("latin-1").split(",")
        for entry in reversed([e for e in chain if e.strip()]):
            address = _ip(entry)
            if address is None:
                return None  # a garbled chain proves nothing about the client
            if not any(address in net for net in self.config.trusted_proxies):
                return address
        return peer
