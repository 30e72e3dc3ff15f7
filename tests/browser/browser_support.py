"""What the browser tests share: finding chromium, a ledger filled by a real worker run, the
dashboard served by uvicorn on a thread, and a page that records what the browser did.

The ledger is written the way production writes it: an application's jobs run through the test
host (the real runtime on a manual clock), so the dashboard reads rows, events, alerts and
schedule slots that a worker made, never rows typed in by the test.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from acta import Acta, Pause, SyncJobContext
from acta.ids import JobRef
from acta_testing import Host

# Debian's package puts the browser here; ACTA_CHROMIUM names another build of chromium.
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
MISSING_CHROMIUM = (
    "chromium is not installed (apt-get install chromium, or set ACTA_CHROMIUM to its path)"
)
# Bounded waits on the DOM (milliseconds): generous for a loaded 2-core machine, yet a broken
# page fails in seconds, not at the suite's timeout.
DOM_WAIT_MS = 10_000

# The pages' stable hooks (data-testid), in one place.
JOB_STATUS = '[data-testid="job-status"]'
EVENTS = '[data-testid="timeline"] [data-testid="event"]'


def ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def skip_or_fail(reason: str) -> None:
    """Skip on a developer machine; under CI=true a browser that should be there fails."""
    if ci():
        pytest.fail(f"{reason} (CI=true: the browser tests must run)", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str | None:
    """The chromium executable to drive: ``$ACTA_CHROMIUM``, else Debian's, else on PATH."""
    named = os.environ.get("ACTA_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    for candidate in CHROMIUM_PATHS:
        if Path(candidate).is_file():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def artifacts_dir() -> Path:
    """Where screenshots go: ``$ACTA_ARTIFACTS/browser``, else ``acta-artifacts/browser`` in the
    system's temporary folder (one place for every xdist worker, printed at the end of the run
    so CI can keep it). Names carry the provider and the page, so runs replace, not pile up."""
    root = os.environ.get("ACTA_ARTIFACTS") or str(Path(tempfile.gettempdir()) / "acta-artifacts")
    folder = Path(root) / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- a ledger from a real worker run ----------------------------------------------------------

STEPS, STEP = 6, "10m"  # an hour of history for the overview's charts


@dataclass
class Refs:
    """The jobs the run left behind, one per state a page must show."""

    succeeded: list[JobRef] = field(default_factory=list)
    failed: JobRef | None = None
    retrying: JobRef | None = None
    scheduled: JobRef | None = None
    cancelled: JobRef | None = None
    alerting: JobRef | None = None


def declare(app: Acta) -> Callable[[str], JobRef]:
    """Declare the jobs of the demo application; returns an enqueue of a welcome mail (the job
    the live-refresh test adds while the page is open)."""

    @app.job("send-welcome")
    def send_welcome(email: str) -> str:
        return f"welcome mail sent to {email}"

    @app.job("import-feed", max_attempts=1)
    def import_feed(feed: int) -> None:
        raise RuntimeError(f"feed {feed} is empty")

    @app.job("sync-crm", max_attempts=5, backoff="30m")
    def sync_crm(account: str) -> None:
        raise ConnectionError(f"the CRM refused account {account}")

    @app.job("charge-card")
    def charge_card(order: str) -> str:
        return f"charged {order}"

    @app.job("reconcile-books")
    def reconcile(ctx: SyncJobContext) -> None:
        ctx.alert("books do not balance", "ledger 7 is off by 12.40", severity="critical")

    @app.job("approve-order")
    def approve_order(order: str, ctx: SyncJobContext) -> str:
        return f"order {order}: {ctx.wait_signal('approved')}"

    @app.job("audit-books")
    def audit_books() -> Pause:
        return Pause("a person must look at the books")

    @app.job("rollup-metrics", schedule="5m")
    def rollup(ctx: SyncJobContext) -> None:
        ctx.logger.info("rollup until %s", ctx.firing.at)

    return lambda email: send_welcome.enqueue(email)


def populate(app: Acta, host: Host, welcome: Callable[[str], JobRef]) -> Refs:
    """Run the demo application through an hour of the manual clock: a first batch at 00:00,
    then new mails (and one more bad feed) every ten minutes, with the schedule firing and the
    CRM sync retrying as they come due. The charge delayed by two hours stays in the future."""
    refs = Refs()
    refs.succeeded = [welcome(f"user{n}@example.com") for n in range(3)]
    charge = app.definition("charge-card")
    refs.failed = app.definition("import-feed").enqueue(7)
    app.tenants.register("acme-retail", tags=["enterprise"], metadata={"region": "eu"})
    refs.retrying = app.definition("sync-crm").enqueue("ACME-1", tenant="acme-retail")
    refs.scheduled = charge.enqueue("ORD-8", delay="2h", tags=["billing"])
    refs.cancelled = charge.enqueue("ORD-9", delay="1h", correlation_key="order-ORD-9")
    refs.alerting = app.definition("reconcile-books").enqueue()
    app.cancel(refs.cancelled, "customer cancelled the order")
    drain(host)
    for step in range(1, STEPS + 1):
        host.advance(STEP)
        refs.succeeded += [welcome(f"user{step}{n}@example.com") for n in range(step % 3 + 1)]
        if step == STEPS // 2:
            app.definition("import-feed").enqueue(8)
        drain(host)
    return refs


def drain(host: Host, limit: int = 100) -> int:
    """Tick until nothing is claimable now; how many runs there were."""
    for runs in range(limit):
        if host.tick() == "nothing-claimed":
            return runs
    raise AssertionError(f"the worker still had work after {limit} runs")


# -- the dashboard on a thread ----------------------------------------------------------------


@dataclass
class Served:
    """A dashboard listening on 127.0.0.1; ``url(path)`` is an address on it."""

    base: str

    def url(self, path: str = "/") -> str:
        return self.base.rstrip("/") + "/" + path.lstrip("/")

    def same_origin(self, address: str) -> bool:
        mine, theirs = urlsplit(self.base), urlsplit(address)
        return (mine.scheme, mine.netloc) == (theirs.scheme, theirs.netloc)


@contextmanager
def serve(asgi: Any) -> Iterator[Served]:
    """Serve ``asgi`` with uvicorn on a thread, on a port the kernel chose.

    The socket is bound and listening before the thread starts, so the first request queues in
    the kernel's backlog instead of racing the server's start-up."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(asgi, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="dashboard", daemon=True
    )
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
        if thread.is_alive():
            raise AssertionError("the dashboard's server did not stop within 15 s")


@dataclass
class Site:
    """A dashboard over a ledger a real worker run filled, and the host that ran it."""

    provider: str
    served: Served
    host: Host
    app: Acta
    refs: Refs
    welcome: Callable[[str], JobRef]

    def url(self, path: str = "/") -> str:
        return self.served.url(path)


# -- a page that records what it did ----------------------------------------------------------


@dataclass
class Watch:
    """Every request a page made, and every console error or uncaught exception it had."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        page.on("request", lambda request: self.requests.append(request.url))
        # The console says "404" without the address: name it here.
        page.on(
            "response",
            lambda response: (
                self.errors.append(f"HTTP {response.status} for {response.url}")
                if response.status >= 400
                else None
            ),
        )
        page.on(
            "console",
            lambda message: (
                self.errors.append(
                    f"console {message.type}: {message.text} ({message.location.get('url')})"
                )
                if message.type in ("error", "assert")
                else None
            ),
        )
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))

    def foreign(self, served: Served) -> list[str]:
        """Requests that left the dashboard's origin (data: URLs never leave the page)."""
        return [
            url
            for url in self.requests
            if not url.startswith("data:") and not served.same_origin(url)
        ]

    def clear(self) -> None:
        self.requests.clear()
        self.errors.clear()


def new_tab(browser: Any) -> tuple[Any, Any, Watch]:
    """A fresh browser context (its own cookies and storage, so its own CSRF session and theme
    choice), a page in it, and what that page records."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    context.set_default_timeout(DOM_WAIT_MS)
    opened = context.new_page()
    watch = Watch()
    watch.attach(opened)
    return context, opened, watch
