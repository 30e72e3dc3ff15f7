"""Fixtures of the browser tests: one chromium for the session, and per provider a ledger that a
real worker run filled, served by the dashboard on 127.0.0.1.

Every test here is marked ``browser``. Without chromium (or Playwright, or the dashboard's
extra) they skip and say why; under CI=true they fail instead, as PostgreSQL tests do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    MISSING_CHROMIUM,
    Site,
    Watch,
    artifacts_dir,
    chromium_path,
    declare,
    new_tab,
    populate,
    serve,
    skip_or_fail,
)

from acta import Acta
from acta.clock import ManualClock
from acta.provider.protocol import Provider
from acta_testing import Host
from acta_testing.plugin import START
from acta_testing.schemas import ledger_location, sqlite_copy

PROVIDERS = ("sqlite", "postgres")
REFRESH_SECONDS = 1  # the overview's polling period: short, so the live test waits little


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium() -> str:
    found = chromium_path()
    if found is None:
        skip_or_fail(MISSING_CHROMIUM)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """One headless chromium per test module, closed when the module is done.

    Not one per session: while Playwright's sync API is started, its event loop counts as
    running in the main thread, so every async test that ran after a browser test in the same
    process (an xdist worker) would fail with "cannot be called from a running event loop"."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("Playwright is not installed (pip install 'acta-jobs[browser]')")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    """The folder screenshots are saved in (see ``artifacts_dir``)."""
    return artifacts_dir()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Say where the screenshots are, when browser tests ran (on the xdist controller too)."""
    ran = any(
        "tests/browser/" in report.nodeid
        for key in ("passed", "failed")
        for report in terminalreporter.stats.get(key, [])
    )
    if ran and not hasattr(config, "workerinput"):
        terminalreporter.write_line(f"acta: browser screenshots in {artifacts_dir()}")


def _worker_ledger(request: pytest.FixtureRequest, name: str, folder: Path) -> Any:
    """A context manager giving a fresh, migrated ledger of provider ``name``."""
    if name == "postgres":
        return request.getfixturevalue("_acta_postgres_schemas").provider(max_connections=4)
    from contextlib import contextmanager

    from acta.provider.sqlite import SqliteProvider

    @contextmanager
    def sqlite() -> Iterator[Provider]:
        base = request.getfixturevalue("tmp_path_factory").getbasetemp()
        provider = SqliteProvider(sqlite_copy(base, folder / "ledger.sqlite3"))
        try:
            yield provider
        finally:
            provider.close()

    return sqlite()


def _second_provider(provider: Provider) -> Provider:
    """Another provider on the same ledger: the dashboard reads through its own connections,
    as a web process beside the workers would (and an async pool is tied to one loop)."""
    location = ledger_location(provider)
    if location.dialect == "postgres":
        from acta.provider.postgres import PostgresProvider

        assert location.dsn is not None
        return PostgresProvider(location.dsn, schema=location.schema, max_connections=4)
    from acta.provider.sqlite import SqliteProvider

    assert location.path is not None
    return SqliteProvider(location.path)


def make_dashboard(app: Acta, **options: Any) -> Any:
    try:
        from acta.dashboard import create_dashboard
    except ImportError as exc:
        skip_or_fail(
            f"the dashboard cannot be imported ({exc}); pip install 'acta-jobs[dashboard]'"
        )
    return create_dashboard(app, **options)


@pytest.fixture(scope="module", params=PROVIDERS)
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, browser: Any
) -> Iterator[Site]:
    """The demo application run once on a fresh ledger of each provider, its dashboard served
    with every verb family enabled. The worker and the dashboard share the manual clock, so
    "now" on the pages is the run's now."""
    folder = tmp_path_factory.mktemp(f"site-{request.param}")
    clock = ManualClock(START)
    with _worker_ledger(request, request.param, folder) as provider:
        app = Acta()
        welcome = declare(app)
        host = Host(app, provider, clock)
        try:
            refs = populate(app, host, welcome)
            reader = Acta()
            declare(reader)
            second = _second_provider(provider)
            try:
                with reader.bound(second, clock):
                    dashboard = make_dashboard(
                        reader,
                        verbs=("jobs", "bulk", "definitions", "alerts", "schedules", "tenants"),
                        refresh_seconds=REFRESH_SECONDS,
                    )
                    with serve(dashboard) as served:
                        yield Site(request.param, served, host, app, refs, welcome)
            finally:
                second.close()
        finally:
            host.close()


@pytest.fixture(scope="module")
def _tab(browser: Any, site: Site) -> Iterator[tuple[Any, Watch]]:
    context, opened, watch = new_tab(browser)
    yield opened, watch
    context.close()


@pytest.fixture
def page(_tab: tuple[Any, Watch]) -> tuple[Any, Watch]:
    """The module's page (one per site: a context costs time on a busy machine), with its record
    emptied for this test. A test that changes what the browser remembers uses ``new_tab``."""
    opened, watch = _tab
    watch.clear()
    return opened, watch
