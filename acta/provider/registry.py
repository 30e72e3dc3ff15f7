"""Every database provider acta knows, in one place, and how a target picks one.

Each provider package (``acta/provider/<name>/__init__.py``) declares one ``ProviderEntry``
named ``ENTRY``: its name, which targets it accepts, how to build it (importing its driver only
then), its capabilities, the package holding its queries, migrations and schema.sql, and the
module with its test support. ``PROVIDER_MODULES`` below lists those packages; it is the one
line a new provider adds outside its own folder (besides its nox/CI line), see
docs/internals/providers.md. Entries load on first use, and a provider package must not
import its driver at import time, so ``import acta`` never imports psycopg.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any

from acta.about import install_hint
from acta.errors import ConfigurationError
from acta.provider.protocol import Capabilities

if TYPE_CHECKING:
    from acta.provider.protocol import Provider
    from acta.provider.testing import TestSupport

# One line per provider, in the order they are listed to users.
PROVIDER_MODULES = ("acta.provider.sqlite", "acta.provider.postgres", "acta.provider.mariadb")

Opener = Callable[[str, str, Mapping[str, Any]], "Provider"]


def dotted(schema: str) -> str:
    """The plain ``schema.`` qualifier (for a schema name acta validated: no quoting needed)."""
    return f"{schema}."


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    """One provider as the rest of acta sees it."""

    name: str
    """The dialect name (``provider.dialect``, ``--acta-provider``, ``--dialect``)."""
    title: str
    """How messages name it ("PostgreSQL")."""
    package: str
    """The package holding ``queries/*.sql``, ``migrations/`` and ``schema.sql``."""
    capabilities: Capabilities
    accepts: Callable[[str], bool]
    """Whether a database target (URL, DSN or path) is one of this provider's."""
    opener: Opener
    """Builds the provider (without connecting) from ``(target, schema, options)``; it imports
    the provider class, so a missing driver shows up here as an ImportError."""
    example: str
    """What a target of this provider looks like, for the error on an unknown target."""
    placeholder: str
    """A target that satisfies the constructor without connecting (``acta schema sql``)."""
    testing: str
    """The module whose ``SUPPORT`` is this provider's acta.provider.testing.TestSupport."""
    extra: str | None = None
    """The pip extra that brings the driver, if it is not in the standard library."""
    fallback: bool = False
    """Takes the targets no other provider accepts (plain file paths)."""
    paramstyle: str = "named"
    """How the driver writes parameters: what ``:name`` placeholders of acta's SQL become
    (acta.provider.statements.convert_params: "named" for sqlite3, "pyformat" for psycopg)."""
    qualifier: Callable[[str], str] = dotted
    """What the ``{schema}.`` token of acta's SQL stands for in a ledger of that schema name
    (``acta_`` on SQLite, ``"acta".`` on PostgreSQL); it must not import the driver."""
    test_dsn: str | None = None
    """A server provider's test database, used when neither ``--acta-dsn`` nor the environment
    variable ``dsn_env`` names one; None for a provider that needs no server."""
    test_dsn_env: str | None = None
    """The environment variable naming the test database (default ``ACTA_TEST_<NAME>_DSN``)."""
    drivers: tuple[str, ...] = ()
    """The top-level modules of its drivers, sync and async (``("sqlite3", "aiosqlite")``): a
    connection or an error whose type comes from one of them is this provider's."""
    absent: Callable[[str], str | None] = lambda target: None
    """Where opening ``target`` would create an empty ledger because nothing is there yet (a
    file that does not exist), for the CLI to refuse instead; None when there is something."""
    outbox: str | None = None
    """The module whose ``OUTBOX`` is this provider's acta.provider.outbox.OutboxDialect (its
    ``outbox/`` folder holds the SQL); None: it cannot be an outbox source."""

    def matches(self, target: str) -> bool:
        return self.accepts(target)

    def open(self, target: str, *, schema: str = "acta", **options: Any) -> Provider:
        """Build this provider for ``target``; ConfigurationError naming the extra when its
        driver is not installed."""
        try:
            return self.opener(target, schema, options)
        except ImportError as exc:
            if self.extra is None:
                raise
            raise ConfigurationError(
                f"{self.title} support needs the {self.extra} extra: "
                f"{install_hint(self.extra)} ({exc})"
            ) from exc

    @property
    def server(self) -> bool:
        """The provider needs a database server (its tests need a reachable ``test_dsn``)."""
        return self.test_dsn is not None

    @property
    def dsn_env(self) -> str:
        return self.test_dsn_env or f"ACTA_TEST_{self.name.upper()}_DSN"

    def test_target(self, given: str | None = None) -> str:
        """The database the tests use: ``given`` (``--acta-dsn``), else ``$<dsn_env>``, else
        ``test_dsn``; "" for a provider without a server."""
        return given or os.environ.get(self.dsn_env) or self.test_dsn or ""

    def support(self) -> TestSupport:
        """The test support of this provider (fresh ledgers, operator connections)."""
        found: TestSupport = import_module(self.testing).SUPPORT
        return found


@cache
def entries() -> tuple[ProviderEntry, ...]:
    """Every provider entry, in ``PROVIDER_MODULES`` order."""
    found = []
    for module in PROVIDER_MODULES:
        value = import_module(module).ENTRY
        if not isinstance(value, ProviderEntry):
            raise TypeError(f"{module}.ENTRY is not a ProviderEntry")
        found.append(value)
    return tuple(found)


def names() -> tuple[str, ...]:
    return tuple(e.name for e in entries())


def entry(name: str) -> ProviderEntry:
    """The entry called ``name``; ConfigurationError listing the known ones otherwise."""
    for found in entries():
        if found.name == name:
            return found
    raise ConfigurationError(f"unknown provider {name!r}: use one of {', '.join(names())}")


def for_driver(value: object) -> ProviderEntry | None:
    """The provider whose driver made ``value`` (a connection, a cursor, an error), by the
    module its type comes from; None for anything else (SQLAlchemy objects included)."""
    root = type(value).__module__.split(".", 1)[0]
    for found in entries():
        if root in found.drivers:
            return found
    return None


def for_target(target: str) -> ProviderEntry:
    """The provider a database target belongs to: the first entry that accepts it, the
    fallback entry (plain paths) only when no other does."""
    ordered = sorted(entries(), key=lambda e: e.fallback)
    for found in ordered:
        if found.matches(target):
            return found
    examples = " or ".join(e.example for e in entries())
    raise ConfigurationError(f"unsupported database {target!r}: use {examples}")
