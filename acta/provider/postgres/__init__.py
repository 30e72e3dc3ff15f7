"""The PostgreSQL provider (needs the ``postgres`` extra: psycopg and psycopg-pool), and its
registry entry. ``PostgresProvider`` is imported on first use, so listing the entry (which
``import acta`` may do) never imports psycopg."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from acta.provider.protocol import Capabilities
from acta.provider.registry import ProviderEntry

if TYPE_CHECKING:
    from acta.provider.postgres.provider import PostgresProvider

__all__ = ["ENTRY", "PostgresProvider"]

SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def __getattr__(name: str) -> Any:
    if name == "PostgresProvider":
        from acta.provider.postgres.provider import PostgresProvider

        return PostgresProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _qualifier(schema: str) -> str:
    from acta.provider.postgres.catalog import qualifier  # imports psycopg: only when asked

    return qualifier(schema)


def _accepts(target: str) -> bool:
    # A URL, or a libpq keyword/value string ("host=db dbname=jobs").
    return target.startswith(SCHEMES) or target.startswith(("host=", "dbname="))


def _open(target: str, schema: str, options: Mapping[str, Any]) -> PostgresProvider:
    from acta.provider.postgres.provider import PostgresProvider

    # durability is a SQLite option; a server decides its own.
    kept = {k: v for k, v in options.items() if k != "durability"}
    return PostgresProvider(target, schema=schema, **kept)


ENTRY = ProviderEntry(
    name="postgres",
    title="PostgreSQL",
    package=__name__,
    capabilities=Capabilities(fused=True, notify=True),
    accepts=_accepts,
    opener=_open,
    example="a postgresql:// URL",
    placeholder="postgresql://localhost/acta",
    testing="acta.provider.postgres.testing",
    extra="postgres",
    paramstyle="pyformat",
    qualifier=_qualifier,
    test_dsn="postgresql://postgres@127.0.0.1:5432/test",
    test_dsn_env="ACTA_TEST_DSN",
    drivers=("psycopg",),
    outbox="acta.provider.postgres.outbox_dialect",
)
