"""Shared by the chaos tests: a migrated PostgreSQL ledger for real worker processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def pg_ledger(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(dsn, schema) of a migrated, empty PostgreSQL ledger from the session's pool (skips
    without PostgreSQL, fails under CI=true)."""
    from acta_testing.schemas import PostgresSchemas

    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    name = schemas.take()
    try:
        yield schemas.dsn, name
    finally:
        schemas.give_back(name)
