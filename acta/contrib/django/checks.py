"""System checks for acta's Django backend (``manage.py check``).

Errors: a ledger alias missing from DATABASES, an unsupported engine, psycopg2 instead of
psycopg 3, a ledger that is missing or behind (run ``manage.py migrate``). Warning: a SQLite
alias without ``"transaction_mode": "IMMEDIATE"``, whose transactions take the write lock only
at their first write and can then fail with "database is locked" instead of waiting.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from acta.errors import ActaError, DatabaseUnavailableError, SchemaError

_registered = False


def register() -> None:
    global _registered
    if not _registered:
        checks.register(_database_checks, checks.Tags.database)
        _registered = True


def backend_checks(backend: Any) -> list[checks.CheckMessage]:
    """Checks that need no database connection (run by ``manage.py check``)."""
    alias = backend.config.database
    found: list[checks.CheckMessage] = []
    config = connections.settings.get(alias)
    if config is None:
        return [checks.Error(f"the ledger alias {alias!r} is not in DATABASES", id="acta.E001")]
    engine = str(config.get("ENGINE", ""))
    if engine.endswith("postgresql"):
        if importlib.util.find_spec("psycopg") is None:
            found.append(
                checks.Error(
                    f"DATABASES[{alias!r}] runs on psycopg2; acta needs psycopg 3",
                    hint="pip install 'acta-jobs[postgres]' (Django then uses psycopg 3 too)",
                    id="acta.E002",
                )
            )
    elif engine.endswith("sqlite3"):
        mode = str(config.get("OPTIONS", {}).get("transaction_mode", "")).upper()
        if mode != "IMMEDIATE":
            found.append(
                checks.Warning(
                    f"DATABASES[{alias!r}] is SQLite without transaction_mode IMMEDIATE",
                    hint=f"DATABASES[{alias!r}]['OPTIONS'] = {{'transaction_mode': 'IMMEDIATE'}}",
                    id="acta.W001",
                )
            )
    else:
        found.append(
            checks.Error(
                f"DATABASES[{alias!r}] uses {engine}; acta's backend supports SQLite and "
                "PostgreSQL",
                id="acta.E003",
            )
        )
    return found


def _database_checks(databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The ledger of each acta backend is there and current (``check --database``)."""
    from django.tasks import task_backends

    found: list[checks.CheckMessage] = []
    for backend in task_backends.all():
        # Asked of the backend, not of its class: the backend module imports this one.
        if not hasattr(backend, "ledgers") or not hasattr(backend, "config"):
            continue
        if databases is not None and backend.config.database not in databases:
            continue
        found.extend(ledger_checks(backend))
    return found


def ledger_checks(backend: Any) -> list[checks.CheckMessage]:
    try:
        for app in backend.ledgers.all(sorted(backend.queues)):
            app.provider  # opens it and checks the schema  # noqa: B018
    except SchemaError as exc:
        return [
            checks.Error(
                f"acta's ledger is missing or behind: {exc}",
                hint="run `manage.py migrate acta`",
                id="acta.E004",
            )
        ]
    except (DatabaseUnavailableError, ImproperlyConfigured, ActaError) as exc:
        return [checks.Error(f"acta's ledger cannot be checked: {exc}", id="acta.E005")]
    return []
