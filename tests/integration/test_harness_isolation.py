"""Isolation by default (issue 28 item 1): under acta's pytest plugin a test cannot write to the
database its application names, whichever fixture it uses.

Each case runs a small user project of its own (pytester, in this process) whose module-level
application names a real, migrated ledger of the chosen provider: a SQLite file, or a schema on
the PostgreSQL server. After the inner run that ledger must be exactly as it was.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta
from acta_testing.plugin import chosen_provider, postgres_dsn

if TYPE_CHECKING:
    from acta.provider.testing import TestLedgers

pytest_plugins = ["pytester"]

INI = (
    "[pytest]\npythonpath = .\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
)
SHOP = """
import os

from acta import Acta

app = Acta(os.environ["SHOP_DATABASE"], schema=os.environ["SHOP_SCHEMA"])


@app.job("send-receipt")
def send_receipt(order: int) -> str:
    return f"receipt {order}"
"""
FORGETFUL = """
import shop


def test_with_the_host_but_no_override(acta_host):
    ref = shop.send_receipt.enqueue(1)
    assert shop.app.get(ref).name == "send-receipt"


def test_with_no_fixture_at_all():
    ref = shop.send_receipt.enqueue(2)
    assert shop.app.get(ref).name == "send-receipt"


async def test_async_with_no_fixture_at_all():
    ref = await shop.send_receipt.enqueue_async(3)
    assert (await shop.app.get_async(ref)).name == "send-receipt"


def test_the_default_app(acta_app):
    @acta_app.job("note")
    def note() -> None:
        pass

    note.enqueue()
    assert len(acta_app.jobs()) == 1
"""
OVERRIDING = """
import pytest

import shop


@pytest.fixture
def acta_app():
    return shop.app


def test_runs_on_the_host(acta_host):
    ref = shop.send_receipt.enqueue(4)
    assert acta_host.tick() == "completed"
    assert shop.app.result(ref) == "receipt 4"


def test_fails_and_keeps_its_ledger(acta_host):
    shop.send_receipt.enqueue(5)
    assert acta_host.tick() == "nothing-claimed", "meant to fail"
"""


class Production:
    """The database the inner project's application names, migrated, with one job in it."""

    def __init__(self, ledgers: TestLedgers, folder: Path, dialect: str) -> None:
        self._fresh = ledgers.fresh_database(folder)
        self.dialect = dialect
        self.target = self._fresh.target
        self.schema = self._fresh.schema("shop")
        self.app = Acta(self.target, schema=self.schema, apply_migrations=True)

        @self.app.job("send-receipt")
        def send_receipt(order: int) -> str:
            return f"receipt {order}"

        self.app.migrate()
        send_receipt.enqueue(0)

    def state(self) -> Any:
        """The file's bytes on SQLite; on a server, every job the schema holds."""
        if self.dialect == "sqlite":
            self.app.close()  # checkpoint the WAL: the file alone then says everything
            return hashlib.sha256(Path(self.target).read_bytes()).hexdigest()
        return sorted((j.job_ref, j.status.label) for j in self.app.jobs(include_system=True))

    def close(self) -> None:
        self.app.close()
        self._fresh.close()


@pytest.fixture
def production(request: pytest.FixtureRequest, _acta_ledgers: TestLedgers, tmp_path: Path) -> Any:
    found = Production(_acta_ledgers, tmp_path, chosen_provider(request.config))
    yield found
    found.close()


@pytest.fixture
def project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, production: Production
) -> pytest.Pytester:
    monkeypatch.setenv("SHOP_DATABASE", production.target)
    monkeypatch.setenv("SHOP_SCHEMA", production.schema)
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini(INI)
    pytester.makepyfile(shop=SHOP)
    return pytester


def _run(request: pytest.FixtureRequest, project: pytest.Pytester, *args: str) -> Any:
    provider = chosen_provider(request.config)
    dsn = postgres_dsn(request.config.getoption("acta_dsn"))
    return project.runpytest(
        "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist",
        "-W", "ignore::acta_testing.isolation.IsolationWarning",
        f"--acta-provider={provider}", f"--acta-dsn={dsn}", *args,
    )  # fmt: skip


def test_a_test_that_forgets_the_override_cannot_write_to_the_configured_database(
    request: pytest.FixtureRequest, project: pytest.Pytester, production: Production
) -> None:
    before = production.state()
    project.makepyfile(test_forgetful=FORGETFUL)
    result = _run(request, project)
    result.assert_outcomes(passed=4)
    assert production.state() == before


def test_the_override_runs_on_the_test_ledger_and_a_kept_ledger_is_named(
    request: pytest.FixtureRequest, project: pytest.Pytester, production: Production
) -> None:
    before = production.state()
    project.makepyfile(test_overriding=OVERRIDING)
    result = _run(request, project, "--acta-keep")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["acta: kept the ledger of test_overriding.py::test_fails_and_keeps_its_ledger: *"]
    )
    assert "test_runs_on_the_host:" not in result.stdout.str()  # only failed tests keep theirs
    assert production.state() == before


def test_use_at_import_time_is_refused_naming_the_fixture(
    request: pytest.FixtureRequest, project: pytest.Pytester, production: Production
) -> None:
    before = production.state()
    project.makepyfile(
        test_at_import="import shop\n\nshop.send_receipt.enqueue(9)\n\n\ndef test_x():\n    pass\n"
    )
    result = _run(request, project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ConfigurationError*outside a test*"])
    assert "override the `acta_app` fixture" in result.stdout.str()
    assert production.state() == before


def test_the_host_warns_when_it_runs_another_application(
    request: pytest.FixtureRequest, project: pytest.Pytester
) -> None:
    project.makepyfile(test_forgetful=FORGETFUL)
    result = project.runpytest(
        "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist",
        f"--acta-provider={chosen_provider(request.config)}",
        "-k", "with_the_host_but_no_override",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*IsolationWarning*override the `acta_app` fixture*"])
