"""The lab page serves acta's dashboard: an ASGI application behind its stdlib HTTP server.

The lab's page is a small ``http.server`` (no dependency beyond the standard library, so the
lab runs on a bare install). When ``acta-jobs[dashboard]`` is installed, ``mount_dashboard`` puts
acta's own dashboard of the lab's ledger under ``/dashboard/`` of that page: each request the
page hands over (after its loopback guards) is turned into one ASGI HTTP call, run on an event
loop the bridge keeps in a thread, and its answer written back. The dashboard stays read-only
(no verb families enabled) and keeps its own local-only guard, which sees the real client
address and Host of the request.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from anvil.lab.control import Lab

Asgi = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]
PREFIX = "/dashboard"
MOST_BODY = 1_000_000  # the dashboard's forms are small; refuse anything near this


class Bridge:
    """Calls an ASGI app for requests of an ``http.server`` handler, on a loop in a thread."""

    def __init__(self, app: Asgi, root_path: str) -> None:
        self.app = app
        self.root_path = root_path
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="lab-asgi", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        if length > MOST_BODY:
            handler.send_error(413, "request body too large")
            return
        body = handler.rfile.read(length) if length else b""
        path, _, query = handler.path.partition("?")
        address: Any = handler.server.server_address  # (host, port) for an IP server
        host, port = address[0], address[1]
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": handler.command,
            "scheme": "http",
            "path": unquote(path),
            "raw_path": path.encode(),
            "root_path": self.root_path,
            "query_string": query.encode(),
            "headers": [(k.lower().encode(), v.encode()) for k, v in handler.headers.items()],
            "client": handler.client_address[:2],
            "server": (str(host), int(port)),
        }
        answer = asyncio.run_coroutine_threadsafe(_call(self.app, scope, body), self.loop)
        status, headers, content = answer.result(timeout=60)
        handler.send_response(status)
        for name, value in headers:
            handler.send_header(name.decode("latin-1"), value.decode("latin-1"))
        handler.end_headers()
        handler.wfile.write(content)


async def _call(
    app: Asgi, scope: dict[str, Any], body: bytes
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    sent = False
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> MutableMapping[str, Any]:
        nonlocal sent
        if sent:  # the whole body went in the first message: the client is gone after it
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = int(message["status"])
            headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, headers, b"".join(chunks)


def mount_dashboard(page: Any, lab: Lab) -> Bridge | None:
    """Serve acta's dashboard of ``lab``'s ledger under ``/dashboard/`` of ``page``; None (and
    nothing mounted) when the ``acta-jobs[dashboard]`` extra is not installed."""
    try:
        from acta.dashboard import create_dashboard
    except ImportError:
        return None
    bridge = Bridge(create_dashboard(lab.producer), PREFIX)
    page.mount(PREFIX + "/", bridge)
    return bridge
