"""pytest plugin: fixtures for a per-test ledger, a manual clock and the test host.

Registered through the ``pytest11`` entry point. It imports acta lazily, inside fixtures and
hooks, so installing acta costs test sessions that never use it nothing. A failing test that
used a host gets an "acta ledger" section in its report with the jobs and their events.

Tests marked ``acta_conformance`` are behaviour specs that must hold on every provider (acta's
own ``conformance/`` suite marks its tests so). For them the plugin enforces what the suite
promises: on ``--acta-provider=sqlserver`` (not implemented yet) they skip with that reason;
with ``CI=true`` a spec that skips on PostgreSQL is a failure; and the terminal summary says how
many specs ran on which provider.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from acta_testing.isolation import HOSTS, SCHEDULES_MARK, Isolation

if TYPE_CHECKING:
    from acta.app import Acta
    from acta.clock import ManualClock
    from acta.provider.protocol import Provider
    from acta.provider.registry import ProviderEntry
    from acta.provider.testing import TestLedgers
    from acta_testing.host import AsyncHost, Host
    from acta_testing.schemas import PostgresSchemas

START = datetime(2026, 1, 1, tzinfo=UTC)
_FAILED = pytest.StashKey[bool]()
KEPT = "acta-kept-ledger"  # the user property a kept ledger is reported by (xdist carries it)
_LEDGERS = pytest.StashKey[dict[str, Any]]()
# Providers announced but not in this build: their specs skip with SQLSERVER_MISSING. A name
# here stops counting as missing the moment its package is in the registry (_missing), so a
# provider that arrives needs no change to this plugin.
MISSING_PROVIDERS = ("sqlserver",)
DEFAULT_POSTGRES_DSN = "postgresql://postgres@127.0.0.1:5432/test"
CONFORMANCE = "acta_conformance"
SQLSERVER_MISSING = "the SQL Server provider is not implemented yet"
POSTGRES_MISSING = "PostgreSQL is not available: "
UNAVAILABLE = " is not available: "  # "<title> is not available: <why>", as POSTGRES_MISSING
ISOLATION = "acta-isolation"
SCHEDULES = SCHEDULES_MARK


def _providers() -> tuple[str, ...]:
    """The ``--acta-provider`` choices: every registered provider, then the missing ones."""
    from acta.provider import registry

    names = registry.names()
    return names + tuple(name for name in MISSING_PROVIDERS if name not in names)


def _missing(name: str) -> bool:
    """Whether ``name`` is announced but not in the registry (the registry is only consulted
    for announced names, so runs on a registered provider import nothing here)."""
    if name not in MISSING_PROVIDERS:
        return False
    from acta.provider import registry

    return name not in registry.names()


def __getattr__(name: str) -> Any:
    if name == "PROVIDERS":  # the old constant, computed from the registry
        return _providers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acta")
    group.addoption(
        "--acta-provider",
        default=None,
        # No argparse choices: they come from acta's provider registry, and importing acta
        # for every pytest run of a project that has it installed is what this plugin avoids.
        # chosen_provider() checks the name when a fixture first needs it.
        help="database provider for acta fixtures (default: $ACTA_TEST_PROVIDER or sqlite)",
    )
    group.addoption(
        "--acta-dsn",
        default=None,
        help="server DSN for acta fixtures (default: $ACTA_TEST_DSN)",
    )
    group.addoption(
        "--acta-keep",
        action="store_true",
        default=False,
        help="keep the ledger of each failed test (not emptied, not dropped) and say where it is",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{CONFORMANCE}: a behaviour spec that must pass on every provider (counted per provider; "
        "a skip on PostgreSQL fails under CI=true)",
    )
    config.addinivalue_line(
        "markers",
        f"{SCHEDULES}: the test host runs declared schedules and acta's periodic system jobs "
        "(retention, alerts, outbox relay), which it leaves idle otherwise",
    )
    config.pluginmanager.register(_Tally(config), "acta-tally")
    config.pluginmanager.register(Isolation(), ISOLATION)


def postgres_dsn(option: str | None = None) -> str:
    """The server the tests use: ``--acta-dsn``, else ``$ACTA_TEST_DSN``, else the local
    default ``postgresql://postgres@127.0.0.1:5432/test``."""
    return option or os.environ.get("ACTA_TEST_DSN") or DEFAULT_POSTGRES_DSN


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.fixture
def acta_clock() -> ManualClock:
    """A manual clock at 2026-01-01T00:00:00Z; it moves only when the test moves it. While
    freezegun or time-machine freezes time, it reads the frozen time, and moving it moves that
    (acta_testing.frozen)."""
    from acta.clock import ManualClock
    from acta_testing.frozen import FrozenTime

    return ManualClock(START, follow=FrozenTime())


def chosen_provider(config: pytest.Config) -> str:
    """The provider of this session: ``--acta-provider``, else ``$ACTA_TEST_PROVIDER``, else
    sqlite."""
    name = _chosen_name(config)
    if name not in _providers():
        raise pytest.UsageError(
            f"acta provider {name!r} is not one of {', '.join(_providers())} (ACTA_TEST_PROVIDER)"
        )
    return str(name)


def _chosen_name(config: pytest.Config) -> str:
    """The provider name asked for, unchecked (checking it imports acta)."""
    return str(
        config.getoption("acta_provider") or os.environ.get("ACTA_TEST_PROVIDER") or "sqlite"
    )


def _skip_or_fail(reason: str) -> None:
    """Skip on a developer machine; in CI a database that should be there and is not fails."""
    if _ci():
        pytest.fail(f"{reason} (CI=true: a skipped database is a failure)", pytrace=False)
    pytest.skip(reason)


def _entry(name: str) -> ProviderEntry:
    from acta.provider import registry

    return registry.entry(name)


def _server(name: str) -> bool:
    """Whether ``name`` is a registered provider that needs a database server."""
    from acta.provider import registry

    return name in registry.names() and _entry(name).support().server


def _ledgers(request: pytest.FixtureRequest, name: str) -> TestLedgers:
    """The test ledgers of provider ``name`` for this session (made on first use, released by
    ``_acta_ledger_sessions`` at the end); skips, or fails under CI=true, when the provider
    cannot run here."""
    from acta.provider.testing import ProviderUnavailable

    opened: dict[str, Any] = request.getfixturevalue("_acta_ledger_sessions")
    found = opened.get(name)
    if isinstance(found, str):
        _skip_or_fail(found)  # the first attempt said why; do not try again for every test
    if found is None:
        entry = _entry(name)
        dsn = postgres_dsn(request.config.getoption("acta_dsn"))
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        try:
            base = request.getfixturevalue("tmp_path_factory").getbasetemp()
            found = entry.support().open_session(dsn, worker, base)
        except ProviderUnavailable as exc:
            opened[name] = f"{entry.title}{UNAVAILABLE}{exc}"
            _skip_or_fail(opened[name])
        opened[name] = found
    return found  # type: ignore[return-value]


@pytest.fixture(scope="session")
def _acta_ledger_sessions() -> Iterator[dict[str, Any]]:
    """Each provider's test ledgers of this session, by name; all released at the end."""
    opened: dict[str, Any] = {}
    yield opened
    problems = [
        p for found in opened.values() if not isinstance(found, str) for p in found.finish()
    ]
    if problems:
        pytest.fail("acta test ledgers: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def _acta_postgres_schemas(request: pytest.FixtureRequest) -> PostgresSchemas:
    """This test process's pool of migrated PostgreSQL schemas, for tests about PostgreSQL
    itself, whatever the chosen provider (see acta.provider.postgres.testing)."""
    found: PostgresSchemas = _ledgers(request, "postgres")  # type: ignore[assignment]
    return found


@pytest.fixture
def _acta_ledgers(request: pytest.FixtureRequest) -> TestLedgers:
    """The chosen provider's test ledgers (skips on a provider acta does not have yet)."""
    chosen = chosen_provider(request.config)
    if _missing(chosen):
        pytest.skip(SQLSERVER_MISSING)
    return _ledgers(request, chosen)


@pytest.fixture
def acta_provider(
    request: pytest.FixtureRequest, _acta_ledgers: TestLedgers, tmp_path: Any
) -> Iterator[Provider]:
    """A fresh, migrated ledger for this test only, on the provider chosen with
    ``--acta-provider`` / ``$ACTA_TEST_PROVIDER`` (sqlite by default) and, for servers,
    ``--acta-dsn`` / ``$ACTA_TEST_DSN``. With ``--acta-keep`` a failed test's ledger is kept
    and the end of the run says where."""
    with _acta_ledgers.ledger(tmp_path) as provider:
        yield provider
        if request.config.getoption("acta_keep") and request.node.stash.get(_FAILED, False):
            keep = getattr(_acta_ledgers, "keep", None)
            where = keep(provider) if keep else "this provider cannot keep a ledger"
            request.node.user_properties.append((KEPT, where))


@pytest.fixture
def acta_app(request: pytest.FixtureRequest) -> Acta:
    """The application under test. Override this fixture to return your own ``Acta``."""
    from acta.app import Acta

    app = Acta()
    # Never its default database: bound to the test's ledger like an imported application.
    isolation = request.config.pluginmanager.get_plugin(ISOLATION)
    if isolation is not None:
        isolation.adopt(app)
    return app


def _schedules(request: pytest.FixtureRequest) -> bool:
    """Whether the test opted in to schedules and periodic system jobs (``acta_schedules``)."""
    return request.node.get_closest_marker(SCHEDULES) is not None


def _remember(request: pytest.FixtureRequest, host: Any) -> None:
    request.node.stash.setdefault(HOSTS, []).append(host)


@pytest.fixture
def acta_host(
    request: pytest.FixtureRequest, acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock
) -> Iterator[Host]:
    """The sync test host for ``acta_app`` on a per-test ledger and the manual clock."""
    from acta_testing.host import Host

    host = Host(acta_app, acta_provider, acta_clock, schedules=_schedules(request))
    _remember(request, host)
    yield host
    host.close()


@pytest.fixture
def acta_async_host(
    request: pytest.FixtureRequest, acta_app: Acta, acta_provider: Provider, acta_clock: ManualClock
) -> Iterator[AsyncHost]:
    """The async test host; await its methods inside an async test."""
    from acta_testing.host import AsyncHost

    host = AsyncHost(acta_app, acta_provider, acta_clock, schedules=_schedules(request))
    _remember(request, host)
    yield host
    host.release()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Specs cannot run on a provider that does not exist yet: say so on each of them."""
    if not _missing(_chosen_name(config)):
        return
    skip = pytest.mark.skip(reason=SQLSERVER_MISSING)
    for item in items:
        if item.get_closest_marker(CONFORMANCE) is not None:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    hosts = item.stash.get(HOSTS, [])
    if report.failed and hosts and call.when == "call":
        from acta_testing.report import ledger_section

        for index, host in enumerate(hosts):
            title = "acta ledger" if len(hosts) == 1 else f"acta ledger ({index + 1})"
            report.sections.append((title, ledger_section(host.app)))
    if (
        report.skipped
        and not hasattr(report, "wasxfail")
        and _ci()
        and item.get_closest_marker(CONFORMANCE) is not None
        and _server(chosen_provider(item.config))
    ):
        # A spec that skips on a server provider in CI proves nothing: it fails, with the reason.
        title = _entry(chosen_provider(item.config)).title
        report.outcome = "failed"
        report.longrepr = (
            f"skipped on {title}: {_skip_reason(report)} "
            f"(CI=true: a conformance spec that skips on {title} is a failure)"
        )
    return report


def _titles() -> set[str]:
    from acta.provider import registry

    return {e.title for e in registry.entries()}


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


class _Tally:
    """Counts the specs of this session per outcome (on the xdist controller too, which sees
    every worker's reports) and remembers why a provider (PostgreSQL, say) did not run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.specs: dict[str, str] = {}
        self.not_run: dict[str, str] = {}
        self.kept: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == KEPT:
                self.kept[report.nodeid] = str(value)
        if report.skipped and not hasattr(report, "wasxfail"):
            reason = _skip_reason(report)
            title, found, why = reason.partition(UNAVAILABLE)
            if found and title in _titles():
                self.not_run[title] = why
        if CONFORMANCE not in report.keywords:
            return
        if report.failed:
            outcome = "failed"
        elif report.skipped:
            outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        elif report.when == "call":
            outcome = "passed"
        else:
            return
        if self.specs.get(report.nodeid) != "failed":
            self.specs[report.nodeid] = outcome

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """``acta conformance: 412 specs passed on postgres (0 skipped)``, and a plain line
        when tests that needed PostgreSQL could not run."""
        if hasattr(self.config, "workerinput"):
            return  # an xdist worker: the controller prints the summary
        if self.specs:
            outcomes = list(self.specs.values())
            provider = chosen_provider(self.config)
            parts = [f"{outcomes.count('passed')} specs passed"]
            parts += [f"{outcomes.count(k)} {k}" for k in ("failed", "xfailed") if k in outcomes]
            skipped = outcomes.count("skipped")
            line = f"acta conformance: {', '.join(parts)} on {provider} ({skipped} skipped)"
            failed = "failed" in outcomes
            warn = not failed and skipped > 0 and _server(provider)
            terminalreporter.write_line(line, red=failed, yellow=warn, bold=True)
        for title, why in self.not_run.items():
            terminalreporter.write_line(f"acta: {title} was not run: {why}", yellow=True, bold=True)
        for nodeid, where in self.kept.items():
            terminalreporter.write_line(f"acta: kept the ledger of {nodeid}: {where}", bold=True)
