"""The embedded SQLite provider, and its registry entry (acta.provider.registry)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acta.errors import ConfigurationError
from acta.provider.protocol import Capabilities
from acta.provider.registry import ProviderEntry
from acta.provider.sqlite.provider import SqliteProvider

__all__ = ["ENTRY", "SqliteProvider", "sqlite_path"]


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


def prefix(schema: str) -> str:
    """``acta_``: one SQLite file has no schemas, so a ledger's tables carry its name."""
    return f"{schema}_"


def _absent(target: str) -> str | None:
    path = sqlite_path(target)
    if path is None or path == ":memory:" or Path(path).exists():
        return None
    return path


def _accepts(target: str) -> bool:
    return target.startswith("sqlite:") or "://" not in target


def _open(target: str, schema: str, options: Mapping[str, Any]) -> SqliteProvider:
    path = sqlite_path(target)
    if path is None:
        raise ConfigurationError(f"{target!r} is not a SQLite path")
    return SqliteProvider(path, schema=schema, **options)


ENTRY = ProviderEntry(
    name="sqlite",
    title="SQLite",
    package=__name__,
    capabilities=Capabilities(fused=False, notify=False),
    accepts=_accepts,
    opener=_open,
    example="a SQLite path (sqlite:///jobs.db)",
    placeholder="acta-schema-review.sqlite3",
    testing="acta.provider.sqlite.testing",
    fallback=True,
    paramstyle="named",
    qualifier=prefix,
    drivers=("sqlite3", "aiosqlite"),
    outbox="acta.provider.sqlite.outbox_dialect",
    absent=_absent,
)
