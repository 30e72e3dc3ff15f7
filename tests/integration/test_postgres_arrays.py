"""How acta's PostgreSQL cursors send lists and read rows, checked against a real server.

Flat int lists take acta's quick ``bigint[]`` path (``acta.provider.postgres.arrays``); every
other list must still go through psycopg's own dumper and arrive as the same array. Rows come
back as dicts with instants in UTC, whatever the session's time zone. Without a server these
tests skip, and under CI=true they fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from acta.provider.postgres.connect import utc_dict_row
from acta.provider.postgres.link import binary_lists

if TYPE_CHECKING:
    from acta_testing.schemas import PostgresSchemas


@pytest.fixture
def cur(request: pytest.FixtureRequest) -> Iterator[psycopg.RawCursor[dict[str, Any]]]:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    with (
        psycopg.connect(schemas.dsn, autocommit=True) as conn,
        psycopg.RawCursor(conn, row_factory=utc_dict_row) as cursor,
    ):
        binary_lists(cursor)
        yield cursor


def _sent(cur: psycopg.RawCursor[dict[str, Any]], value: list[Any], cast: str) -> dict[str, Any]:
    cur.execute(f"SELECT $1::{cast} AS v, pg_typeof($1)::text AS sent", [value])
    row = cur.fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize(
    "value",
    [[1, 2, 3], [0], [-(2**63), 2**63 - 1], [7, None, 9], list(range(500))],
    ids=["small", "one", "int8-bounds", "with-null", "long"],
)
def test_int_lists_go_as_bigint_arrays(
    cur: psycopg.RawCursor[dict[str, Any]], value: list[Any]
) -> None:
    row = _sent(cur, value, "bigint[]")
    assert row == {"v": value, "sent": "bigint[]"}


def test_a_narrower_cast_still_applies(cur: psycopg.RawCursor[dict[str, Any]]) -> None:
    assert _sent(cur, [1, 2], "smallint[]")["v"] == [1, 2]


def test_an_int_beyond_64_bits_is_refused_not_truncated(
    cur: psycopg.RawCursor[dict[str, Any]],
) -> None:
    with pytest.raises(psycopg.DataError, match="64-bit"):
        _sent(cur, [1, 2**64], "bigint[]")


@pytest.mark.parametrize(
    ("value", "cast"),
    [
        (["a", "b", None], "text[]"),
        ([True, False], "boolean[]"),
        ([b"\x00\x01"], "bytea[]"),
        ([None, None], "bigint[]"),
        ([], "bigint[]"),
        ([[1, 2], [3, 4]], "bigint[]"),
    ],
    ids=["text", "bool", "bytes", "all-null", "empty", "nested"],
)
def test_other_lists_keep_psycopgs_dumper(
    cur: psycopg.RawCursor[dict[str, Any]], value: list[Any], cast: str
) -> None:
    assert _sent(cur, value, cast)["v"] == value


def test_rows_are_dicts_with_instants_in_utc(cur: psycopg.RawCursor[dict[str, Any]]) -> None:
    cur.execute("SET TimeZone = 'Asia/Kolkata'")  # a session zone acta itself never sets
    cur.execute(
        "SELECT 1 AS n, timestamptz '2026-01-02 03:04:05+00' AS at, NULL::timestamptz AS never"
    )
    row = cur.fetchone()
    assert row == {"n": 1, "at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "never": None}
    assert row["at"].tzinfo is UTC
    cur.execute("SELECT 1 AS n WHERE false")
    assert cur.fetchall() == []
