"""Choosing a provider from what the user typed: a path, ``sqlite:///...`` or a PostgreSQL URL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from acta.errors import ConfigurationError
from acta.provider.protocol import Provider

DEFAULT_DATABASE = "acta.sqlite3"
ENV_DATABASE = "ACTA_DATABASE"
_POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def resolve_database(database: str | Path | None) -> str:
    """The database to use: the argument, else $ACTA_DATABASE, else ./acta.sqlite3."""
    if database is None:
        return os.environ.get(ENV_DATABASE) or DEFAULT_DATABASE
    return str(database)


def sqlite_path(database: str) -> str | None:
    """The file path of a SQLite target, or None if ``database`` names another kind."""
    if database.startswith("sqlite:///"):
        return database[len("sqlite:///") :]
    if database.startswith("sqlite://"):
        raise ConfigurationError(
            f"{database!r}: write sqlite:///relative/path.db or sqlite:////absolute/path.db"
        )
    if database.startswith("sqlite:"):
        return database[len("sqlite:") :]
    if "://" in database:
        return None
    return database


def open_provider(database: str | Path | None, *, schema: str = "acta", **options: Any) -> Provider:
    """Build (without connecting) the provider for ``database``."""
    target = resolve_database(database)
    if target.startswith(_POSTGRES_SCHEMES) or target.startswith(("host=", "dbname=")):
        try:
            from acta.provider.postgres import PostgresProvider
        except ImportError as exc:
            raise ConfigurationError(
                f"PostgreSQL support needs the postgres extra: pip install 'acta[postgres]' ({exc})"
            ) from exc
        pg_options = {k: v for k, v in options.items() if k not in ("durability",)}
        return cast(Provider, PostgresProvider(target, schema=schema, **pg_options))
    path = sqlite_path(target)
    if path is None:
        raise ConfigurationError(
            f"unsupported database {target!r}: use a SQLite path (sqlite:///jobs.db) or a "
            "postgresql:// URL"
        )
    from acta.provider.sqlite import SqliteProvider

    return SqliteProvider(path, schema=schema, **options)
