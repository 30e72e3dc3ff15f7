"""The lab's page: a small web view with controls, served on 127.0.0.1 only.

Stdlib ``http.server``, bound to the loopback address, never to another interface. Two more
guards, because a page on 127.0.0.1 can still be reached by a hostile page in the browser:
a request whose ``Host`` is not a loopback name is refused (DNS rebinding), and a control
(a POST) must carry the ``X-Anvil-Lab`` header, which a cross-site form cannot send and a
cross-site script cannot send without a preflight this server never answers.

Routes: ``GET /`` the page, ``GET /api/state`` the lab's state as JSON (``Lab.state``),
``POST /api/enqueue`` (``{"n": N}``), ``/api/workers`` (add one), ``/api/kill``
(``{"pid": P}``, or a random worker) and ``/api/stop`` (a graceful stop of every worker).

The seam for the dashboard: ``Page.mount(prefix, handler)`` hands every request under
``prefix`` to ``handler`` (after the same guards); ``anvil.lab.bridge`` mounts acta's dashboard
there (``/dashboard/``) when the ``acta-jobs[dashboard]`` extra is installed, and ``/api/state``
lists the mounts so the page can link to it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from anvil.lab.control import Lab

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CONTROL_HEADER = "X-Anvil-Lab"
Mounted = Callable[[BaseHTTPRequestHandler], None]


def loopback_host(host: str | None) -> bool:
    """Whether a ``Host`` header names this machine's loopback (with or without a port)."""
    if not host:
        return False
    name = host.strip().lower()
    if name.startswith("["):
        name = name[: name.find("]") + 1] if "]" in name else name
    else:
        name = name.rsplit(":", 1)[0] if ":" in name else name
    return name in LOOPBACK_NAMES


class Page:
    """The lab's HTTP server; ``start()`` serves in a thread, ``close()`` shuts it down."""

    def __init__(self, lab: Lab, port: int = 0) -> None:
        self.lab = lab
        self.mounts: dict[str, Mounted] = {}
        handler = type("Handler", (_Handler,), {"page": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def mount(self, prefix: str, handler: Mounted) -> None:
        """Serve every request whose path starts with ``prefix`` with ``handler``."""
        if not prefix.startswith("/") or prefix in ("/", "/api/"):
            raise ValueError(f"mount prefix: got {prefix!r}; allowed: a path like '/dashboard/'")
        self.mounts[prefix] = handler

    def start(self) -> Page:
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="lab-page", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread is not None:
            self._thread.join()


class _Handler(BaseHTTPRequestHandler):
    page: Page
    server_version = "anvil-lab"

    def log_message(self, format: str, *args: Any) -> None:
        return None  # the terminal view owns the terminal

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: object) -> None:
        self._send(status, json.dumps(data, default=str).encode())

    def _guarded(self) -> bool:
        if not loopback_host(self.headers.get("Host")):
            self._json(403, {"error": "this page answers only to 127.0.0.1 or localhost"})
            return False
        return True

    def _mounted(self) -> bool:
        for prefix, handler in self.page.mounts.items():
            if self.path.startswith(prefix):
                handler(self)
                return True
        return False

    def do_GET(self) -> None:
        if not self._guarded() or self._mounted():
            return
        if self.path in ("/", "/index.html"):
            html = resources.files("anvil.lab").joinpath("page.html").read_bytes()
            self._send(200, html, "text/html; charset=utf-8")
        elif self.path == "/api/state":
            self._json(200, {**self.page.lab.state(), "mounts": sorted(self.page.mounts)})
        else:
            self._json(404, {"error": f"no such page: {self.path}"})

    def do_POST(self) -> None:
        if not self._guarded() or self._mounted():
            return
        if self.headers.get(CONTROL_HEADER) != "1":
            self._json(403, {"error": f"controls need the {CONTROL_HEADER}: 1 header"})
            return
        try:
            body = self._body()
        except ValueError as exc:
            self._json(400, {"error": str(exc)})
            return
        lab = self.page.lab
        if self.path == "/api/enqueue":
            n = body.get("n")
            try:
                lab.enqueue(n)  # type: ignore[arg-type]
            except ValueError as exc:
                self._json(400, {"error": str(exc)})
                return
            self._json(202, {"asked": n})
        elif self.path == "/api/workers":
            worker = lab.add_worker()
            self._json(200, {"pid": worker.pid, "number": worker.number})
        elif self.path == "/api/kill":
            pid = body.get("pid")
            if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int)):
                self._json(400, {"error": f"pid: got {pid!r}; allowed: a worker's pid or none"})
                return
            victim = lab.kill_worker(pid)
            if victim is None:
                self._json(
                    409, {"error": "no live worker to kill" + (f" with pid {pid}" if pid else "")}
                )
                return
            self._json(200, {"pid": victim.pid, "number": victim.number})
        elif self.path == "/api/stop":
            lab.stop()
            self._json(200, {"stopped": True})
        else:
            self._json(404, {"error": f"no such control: {self.path}"})

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > 10_000:
            raise ValueError("request body: too large; allowed: a small JSON object")
        raw = self.rfile.read(length) if length else b"{}"
        try:
            data = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"request body: not JSON ({exc.msg}); allowed: a JSON object") from exc
        if not isinstance(data, dict):
            raise ValueError("request body: not an object; allowed: a JSON object")
        return data
