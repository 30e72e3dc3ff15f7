"""Choosing a provider from what the user typed: a path, ``sqlite:///...`` or a server URL.

The choice itself is the registry's (acta.provider.registry): each provider says which targets
it accepts and how it is built.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from acta.provider import registry
from acta.provider.protocol import Provider
from acta.provider.sqlite import sqlite_path

__all__ = ["DEFAULT_DATABASE", "ENV_DATABASE", "open_provider", "resolve_database", "sqlite_path"]

DEFAULT_DATABASE = "acta.sqlite3"
ENV_DATABASE = "ACTA_DATABASE"


def resolve_database(database: str | Path | None) -> str:
    """The database to use: the argument, else $ACTA_DATABASE, else ./acta.sqlite3."""
    if database is None:
        return os.environ.get(ENV_DATABASE) or DEFAULT_DATABASE
    return str(database)


def open_provider(database: str | Path | None, *, schema: str = "acta", **options: Any) -> Provider:
    """Build (without connecting) the provider for ``database``."""
    target = resolve_database(database)
    return registry.for_target(target).open(target, schema=schema, **options)
