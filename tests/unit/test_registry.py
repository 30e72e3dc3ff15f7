"""The provider registry: which provider a target picks, and what each entry promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from acta.errors import ConfigurationError
from acta.provider import registry
from acta.provider.factory import open_provider, sqlite_path
from acta.provider.sqlite import SqliteProvider


@pytest.mark.parametrize(
    ("target", "name"),
    [
        ("jobs.sqlite3", "sqlite"),
        ("sqlite:///jobs.db", "sqlite"),
        ("sqlite:jobs.db", "sqlite"),
        ("/var/lib/acta/jobs.db", "sqlite"),
        ("postgresql://u@db/jobs", "postgres"),
        ("postgres://u@db/jobs", "postgres"),
        ("postgresql+psycopg://u@db/jobs", "postgres"),
        ("host=db dbname=jobs", "postgres"),
        ("dbname=jobs", "postgres"),
    ],
)
def test_a_target_picks_its_provider(target: str, name: str) -> None:
    assert registry.for_target(target).name == name


def test_an_unknown_scheme_names_what_is_accepted() -> None:
    with pytest.raises(ConfigurationError) as caught:
        open_provider("oracle://db/jobs")
    message = str(caught.value)
    assert "oracle://db/jobs" in message
    assert "sqlite:///jobs.db" in message and "postgresql://" in message


def test_sqlite_with_two_slashes_says_how_to_write_it() -> None:
    with pytest.raises(ConfigurationError, match="sqlite:///relative"):
        open_provider("sqlite://jobs.db")
    assert sqlite_path("sqlite:///a/b.db") == "a/b.db"


def test_open_provider_builds_through_the_registry(tmp_path: object) -> None:
    provider = open_provider(f"sqlite:///{tmp_path}/x.db", schema="other")
    try:
        assert isinstance(provider, SqliteProvider)
        assert provider.schema == "other"
    finally:
        provider.close()


def test_entries_are_unique_and_one_is_the_fallback() -> None:
    names = registry.names()
    assert len(set(names)) == len(names)
    assert [e.name for e in registry.entries() if e.fallback] == ["sqlite"]
    with pytest.raises(ConfigurationError, match="unknown provider 'oracle'"):
        registry.entry("oracle")


def test_each_entry_matches_its_provider_class() -> None:
    """The entry's capabilities and name are the provider's own (the entry is read without
    importing the driver, so it repeats them; this keeps them equal)."""
    pytest.importorskip("psycopg")
    for entry in registry.entries():
        provider = entry.open(entry.placeholder)
        try:
            assert provider.dialect == entry.name
            assert provider.capabilities == entry.capabilities
            location = entry.support().location(provider)
            assert entry.qualifier(provider.schema) == location.qualifier
            assert entry.paramstyle == location.paramstyle
        finally:
            provider.close()


def test_each_entry_says_what_its_tests_need() -> None:
    """A server provider names its test database (and the variable that overrides it); the
    entry's word and its test support's agree; the paramstyle is one acta can write."""
    for entry in registry.entries():
        assert entry.server == entry.support().server
        assert entry.paramstyle in ("named", "pyformat")
        assert entry.dsn_env.startswith("ACTA_TEST_") and entry.dsn_env.endswith("DSN")
        if entry.server:
            assert registry.for_target(entry.test_dsn or "") is entry


def test_the_test_database_is_the_option_then_the_variable_then_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry = registry.ProviderEntry(
        name="example",
        title="Example",
        package="acta.provider.sqlite",
        capabilities=registry.Capabilities(),
        accepts=lambda target: target.startswith("example://"),
        opener=lambda target, schema, options: None,  # type: ignore[arg-type,return-value]
        example="an example:// URL",
        placeholder="example://x",
        testing="acta.provider.sqlite.testing",
        test_dsn="example://localhost/test",
    )
    assert entry.server and entry.dsn_env == "ACTA_TEST_EXAMPLE_DSN"
    monkeypatch.delenv("ACTA_TEST_EXAMPLE_DSN", raising=False)
    assert entry.test_target() == "example://localhost/test"
    monkeypatch.setenv("ACTA_TEST_EXAMPLE_DSN", "example://elsewhere/t")
    assert entry.test_target() == "example://elsewhere/t"
    assert entry.test_target("example://given/t") == "example://given/t"
    assert entry.qualifier("billing") == "billing."


def test_listing_the_providers_does_not_import_psycopg() -> None:
    code = (
        "import sys; import acta; from acta.provider import registry; registry.entries(); "
        "from acta.provider.factory import open_provider; "
        "print('psycopg' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_driver_object_names_its_provider() -> None:
    import sqlite3

    psycopg = pytest.importorskip("psycopg")
    assert registry.for_driver(sqlite3.OperationalError("disk full")) is registry.entry("sqlite")
    with sqlite3.connect(":memory:") as conn:
        assert registry.for_driver(conn) is registry.entry("sqlite")
    assert registry.for_driver(psycopg.OperationalError("gone")) is registry.entry("postgres")
    assert registry.for_driver(ValueError("not a driver's")) is None


def test_a_ledger_file_that_is_not_there_is_said_so(tmp_path: Path) -> None:
    sqlite, postgres = registry.entry("sqlite"), registry.entry("postgres")
    missing = tmp_path / "nothing-here.db"
    assert sqlite.absent(str(missing)) == str(missing)
    assert sqlite.absent(f"sqlite:///{missing}") == str(missing)
    missing.touch()
    assert sqlite.absent(str(missing)) is None
    assert postgres.absent("postgresql://u@db/jobs") is None  # a server is never made by opening
