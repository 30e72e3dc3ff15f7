"""Fixtures for the dashboard's ASGI tests: a ledger produced by a real worker run (the test
host) on SQLite and on PostgreSQL in turn (whatever ``--acta-provider`` says: every test here
runs on both dialects), and clients that reach the dashboard the way a browser on this machine
(or an attacker) would."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from acta import Acta, Pause, SyncJobContext
from acta.dashboard import create_dashboard
from acta.provider.protocol import Provider
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host
from acta_testing.schemas import sqlite_copy

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'
LOCAL = "http://localhost"
LOOPBACK = ("127.0.0.1", 51000)


@pytest.fixture(params=["sqlite", "postgres"])
def acta_provider(
    request: pytest.FixtureRequest, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Provider]:
    """A fresh ledger on each dialect in turn (PostgreSQL skips without a server, and fails
    under CI=true, like every PostgreSQL test)."""
    if request.param == "sqlite":
        provider = SqliteProvider(
            sqlite_copy(tmp_path_factory.getbasetemp(), tmp_path / "ledger.sqlite3")
        )
        yield provider
        provider.close()
        return
    schemas = request.getfixturevalue("_acta_postgres_schemas")
    with schemas.provider(max_connections=4) as provider:
        yield provider


@dataclass
class Ledger:
    """Refs of the jobs a real worker run left behind."""

    ok: str
    failed: str
    ready: str
    evil: str
    alerted: str


def local_client(
    asgi: Any, *, base_url: str = LOCAL, client: tuple[str, int] = LOOPBACK, **kwargs: Any
) -> TestClient:
    return TestClient(asgi, base_url=base_url, client=client, follow_redirects=False, **kwargs)


@pytest.fixture
def populated(acta_app: Acta, acta_host: Host) -> Ledger:
    @acta_app.job("greet")
    def greet(name: str) -> str:
        return f"hello {name}"

    @acta_app.job("charge", max_attempts=2, backoff="1s")
    def charge(card: str) -> None:
        raise RuntimeError(f"gateway refused {card}: {EVIL}")

    @acta_app.job("later")
    def later() -> None:
        return None

    @acta_app.job("reconcile")
    def reconcile(day: str, ctx: SyncJobContext) -> None:
        ctx.alert(f"Mismatch {EVIL}", f"detail {EVIL}", severity="critical")

    ok = greet.enqueue("ada")
    failed = charge.enqueue("4242")
    evil = greet.enqueue(EVIL, tags=["evil<b>tag</b>"], correlation_key=f"order-{EVIL}")
    alerted = reconcile.enqueue("2026-01-01")
    acta_host.run_until_idle()
    acta_host.advance("2s")
    acta_host.run_until_idle()
    ready = later.enqueue(delay="1h")
    return Ledger(str(ok), str(failed), str(ready), str(evil), str(alerted))


@pytest.fixture
def dashboard(acta_app: Acta) -> Callable[..., TestClient]:
    """``dashboard(**create_dashboard options)`` -> a client on this machine, as localhost."""

    def make(**options: Any) -> TestClient:
        return local_client(create_dashboard(acta_app, **options))

    return make


ORIGIN = {"Origin": LOCAL}


def api(client: TestClient) -> TestClient:
    """The client with the session's token in the header a script sends it in."""
    client.headers["X-Acta-CSRF"] = client.get("/api/session").json()["csrf"]
    client.headers.update(ORIGIN)
    return client


@dataclass
class Mixed:
    """Failed feed imports (two for tenant acme), delayed mails, a job waiting for a signal and
    a paused one."""

    failed: list[str]
    acme: list[str]
    delayed: list[str]
    waiting: str
    paused: str


@pytest.fixture
def mixed(acta_app: Acta, acta_host: Host) -> Mixed:
    @acta_app.job("import-feed", max_attempts=1)
    def import_feed(feed: int) -> None:
        raise RuntimeError(f"feed {feed} is empty")

    @acta_app.job("mail")
    def mail(to: str) -> str:
        return to

    @acta_app.job("approve-order")
    def approve(order: str, ctx: SyncJobContext) -> str:
        return str(ctx.wait_signal("approved"))

    @acta_app.job("audit")
    def audit() -> Pause:
        return Pause("a person must look at it")

    acta_app.tenants.register("acme")
    acta_app.tenants.register("globex")
    failed = [str(import_feed.enqueue(n)) for n in range(3)]
    acme = [str(import_feed.enqueue(10 + n, tenant="acme")) for n in range(2)]
    waiting, paused = str(approve.enqueue("ORD-1")), str(audit.enqueue())
    acta_host.run_until_idle()
    delayed = [str(mail.enqueue(f"u{n}@example.com", delay="1h")) for n in range(2)]
    acta_host.advance("1s")  # what finished did so before now (purge's default bound)
    return Mixed(failed + acme, acme, delayed, waiting, paused)
