"""pytest plugin: fixtures for a per-test ledger, a manual clock and the test host.

Registered through the ``pytest11`` entry point. It imports acta lazily, inside fixtures and
hooks, so installing acta costs test sessions that never use it nothing. A failing test that
used a host gets an "acta ledger" section in its report with the jobs and their events.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from acta.app import Acta
    from acta.clock import ManualClock
    from acta.provider.protocol import Provider
    from acta_testing.host import AsyncHost, Host
    from acta_testing.schemas import PostgresSchemas

START = datetime(2026, 1, 1, tzinfo=UTC)
_HOSTS = pytest.StashKey[list[Any]]()
PROVIDERS = ("sqlite", "postgres", "sqlserver")
DEFAULT_POSTGRES_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acta")
    group.addoption(
        "--acta-provider",
        default=None,
        choices=PROVIDERS,
        help="database provider for acta fixtures (default: $ACTA_TEST_PROVIDER or sqlite)",
    )
    group.addoption(
        "--acta-dsn",
        default=None,
        help="server DSN for acta fixtures (default: $ACTA_TEST_DSN)",
    )


@pytest.fixture
def acta_clock() -> ManualClock:
    """A manual clock at 2026-01-01T00:00:00Z; it moves only when the test moves it."""
    from acta.clock import ManualClock

    return ManualClock(START)


def _chosen_provider(config: pytest.Config) -> str:
    name = config.getoption("acta_provider") or os.environ.get("ACTA_TEST_PROVIDER") or "sqlite"
    if name not in PROVIDERS:
        raise pytest.UsageError(
            f"acta provider {name!r} is not one of {', '.join(PROVIDERS)} (ACTA_TEST_PROVIDER)"
        )
    return str(name)


def _skip_or_fail(reason: str) -> None:
    """Skip on a developer machine; in CI a database that should be there and is not fails."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: a skipped database is a failure)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def _acta_postgres_schemas(request: pytest.FixtureRequest) -> Iterator[PostgresSchemas]:
    """This test process's pool of migrated PostgreSQL schemas (see acta_testing.schemas)."""
    from acta_testing.schemas import PostgresSchemas, PostgresUnavailable

    dsn = (
        request.config.getoption("acta_dsn")
        or os.environ.get("ACTA_TEST_DSN")
        or DEFAULT_POSTGRES_DSN
    )
    try:
        schemas = PostgresSchemas(dsn, os.environ.get("PYTEST_XDIST_WORKER", "main"))
    except PostgresUnavailable as exc:
        _skip_or_fail(str(exc))
    yield schemas
    problems = schemas.finish()
    if problems:
        pytest.fail("acta test schemas: " + "; ".join(problems), pytrace=False)


@pytest.fixture
def acta_provider(
    request: pytest.FixtureRequest, tmp_path: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Provider]:
    """A fresh, migrated ledger for this test only, on the provider chosen with
    ``--acta-provider`` / ``$ACTA_TEST_PROVIDER`` (sqlite by default) and, for servers,
    ``--acta-dsn`` / ``$ACTA_TEST_DSN``."""
    chosen = _chosen_provider(request.config)
    if chosen == "sqlserver":
        pytest.skip("the SQL Server provider is not implemented yet")
    if chosen == "postgres":
        schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
        with schemas.provider(max_connections=4) as pg:
            yield pg
        return
    from acta.provider.sqlite import SqliteProvider
    from acta_testing.schemas import sqlite_copy

    base = tmp_path_factory.getbasetemp()
    provider = SqliteProvider(sqlite_copy(base, tmp_path / "ledger.sqlite3"))
    yield provider
    provider.close()


@pytest.fixture
def acta_app() -> Acta:
    """The application under test. Override this fixture to return your own ``Acta``."""
    from acta.app import Acta

    return Acta()


def _remember(request: pytest.FixtureRequest, host: Any) -> None:
    request.node.stash.setdefault(_HOSTS, []).append(host)


@pytest.fixture
def acta_host(
    request: pytest.FixtureRequest, acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock
) -> Iterator[Host]:
    """The sync test host for ``acta_app`` on a per-test ledger and the manual clock."""
    from acta_testing.host import Host

    host = Host(acta_app, acta_provider, acta_clock)
    _remember(request, host)
    yield host
    host.close()


@pytest.fixture
def acta_async_host(
    request: pytest.FixtureRequest, acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock
) -> Iterator[AsyncHost]:
    """The async test host; await its methods inside an async test."""
    from acta_testing.host import AsyncHost

    host = AsyncHost(acta_app, acta_provider, acta_clock)
    _remember(request, host)
    yield host
    host.closed = True
    host._binding.__exit__(None, None, None)
    for worker in host.workers:
        worker.threads.shutdown(wait=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    hosts = item.stash.get(_HOSTS, [])
    if report.failed and hosts and call.when == "call":
        from acta_testing.report import ledger_section

        for index, host in enumerate(hosts):
            title = "acta ledger" if len(hosts) == 1 else f"acta ledger ({index + 1})"
            report.sections.append((title, ledger_section(host.app)))
    return report
