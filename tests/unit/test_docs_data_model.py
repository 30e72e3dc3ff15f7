"""docs/reference/data-model.md matches the tables the migrations create: every table and
column in order, types on both providers, nullability, keys, foreign keys and indexes."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing

import pytest
from docs_support import REFERENCE, ROOT, Table, column_tables, name_of, sections

from acta.provider.sqlite import SqliteProvider

PAGE = REFERENCE / "data-model.md"
PREFIX = "acta_"
POSTGRES = ROOT / "acta" / "provider" / "postgres"
_REFERENCES = re.compile(r"References `(\w+)\.(\w+)`")
_KEY = re.compile(r"(primary key|unique) `\(?([\w, ]+?)\)?`")


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    path = tmp_path_factory.mktemp("model") / "ledger.sqlite3"
    provider = SqliteProvider(path)
    provider.migrate()
    provider.close()
    with closing(sqlite3.connect(path)) as conn:
        yield conn


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'acta\\_%' ESCAPE '\\'"
    )
    return sorted(row[0].removeprefix(PREFIX) for row in rows)


DOCUMENTED = column_tables(PAGE)
INDEXES = column_tables(PAGE, first="index")
TEXT = sections(PAGE)
TABLE_NAMES = sorted(DOCUMENTED)


def test_page_documents_every_table(ledger: sqlite3.Connection) -> None:
    assert _tables(ledger) == TABLE_NAMES


@pytest.mark.parametrize("table", TABLE_NAMES)
def test_columns_types_and_nulls_match_sqlite(table: str, ledger: sqlite3.Connection) -> None:
    doc = DOCUMENTED[table]
    assert doc.header == ("column", "sqlite", "postgresql", "null", "meaning")
    info = ledger.execute(f"PRAGMA table_info({PREFIX}{table})").fetchall()
    assert [name_of(row[0]) for row in doc.rows] == [row[1] for row in info]
    wrong = []
    for row, (_, name, declared, notnull, _, pk) in zip(doc.rows, info, strict=True):
        null = "no" if notnull or pk else "yes"
        if (row[1], row[3]) != (declared, null):
            wrong.append(f"{name}: documented {row[1]}/{row[3]}, is {declared}/{null}")
    assert wrong == []


@pytest.mark.parametrize("table", TABLE_NAMES)
def test_foreign_keys_are_stated(table: str, ledger: sqlite3.Connection) -> None:
    actual = {
        (row[3], row[2].removeprefix(PREFIX), row[4])
        for row in ledger.execute(f"PRAGMA foreign_key_list({PREFIX}{table})")
    }
    stated = {
        (name_of(row[0]), target, column)
        for row in DOCUMENTED[table].rows
        for target, column in _REFERENCES.findall(row[4])
    }
    assert stated == actual


@pytest.mark.parametrize("table", TABLE_NAMES)
def test_keys_line_lists_primary_and_unique_keys(table: str, ledger: sqlite3.Connection) -> None:
    info = ledger.execute(f"PRAGMA table_info({PREFIX}{table})").fetchall()
    pk = tuple(row[1] for row in sorted(info, key=lambda r: r[5]) if row[5])
    actual = {("primary key", pk)}
    for _, name, unique, origin, _ in ledger.execute(f"PRAGMA index_list({PREFIX}{table})"):
        if unique and origin == "u":
            cols = tuple(r[2] for r in ledger.execute(f"PRAGMA index_info('{name}')"))
            actual.add(("unique", cols))
    keys = [line for line in TEXT[table].splitlines() if line.startswith("Keys:")]
    assert len(keys) == 1, f"{table}: one 'Keys:' line expected"
    stated = {
        (kind, tuple(c.strip() for c in cols.split(","))) for kind, cols in _KEY.findall(keys[0])
    }
    assert stated == actual


def _sqlite_indexes(conn: sqlite3.Connection, table: str) -> dict[str, tuple[str, str]]:
    out = {}
    for _, name, _, origin, _ in conn.execute(f"PRAGMA index_list({PREFIX}{table})"):
        if origin != "c":
            continue
        cols = [
            f"{r[2]} DESC" if r[3] else r[2]
            for r in conn.execute(f"PRAGMA index_xinfo('{name}')")
            if r[5]  # key columns only
        ]
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        where = sql.split(" WHERE ", 1)[1].strip() if " WHERE " in sql else "all"
        out[name.removeprefix(PREFIX)] = (", ".join(cols), " ".join(where.split()))
    return out


@pytest.mark.parametrize("table", TABLE_NAMES)
def test_indexes_match_sqlite(table: str, ledger: sqlite3.Connection) -> None:
    doc: Table | None = INDEXES.get(table)
    stated = {}
    if doc is not None:
        assert doc.header == ("index", "columns", "rows", "purpose")
        stated = {name_of(r[0]): (r[1].strip("`"), r[2].strip("`")) for r in doc.rows}
    assert stated == _sqlite_indexes(ledger, table)


# -- PostgreSQL: read from the migration files, no server needed --------------------------------

_CREATE = re.compile(r"CREATE TABLE (?:IF NOT EXISTS )?\{schema\}\.(\w+) \((.*?)\n\)", re.S)
# A later migration adds columns to an existing table: ``ALTER TABLE {schema}.t ADD COLUMN ...``.
_ADD_COLUMN = re.compile(r"ALTER TABLE \{schema\}\.(\w+) ADD COLUMN ([^;]*);")
_CONSTRAINT = ("PRIMARY", "UNIQUE", "CHECK", "FOREIGN", "CONSTRAINT")


# Words that end a column's type in its definition (``done double precision NOT NULL``).
_AFTER_TYPE = {"NOT", "NULL", "PRIMARY", "REFERENCES", "DEFAULT", "UNIQUE", "CHECK", "GENERATED"}


def _type_of(definition: str) -> str:
    """The type of a column definition, which may be several words (``double precision``)."""
    words = definition.split()[1:]
    end = next((i for i, w in enumerate(words) if w in _AFTER_TYPE), len(words))
    return " ".join(words[:end])


def _postgres_tables() -> dict[str, dict[str, tuple[str, str]]]:
    """Column -> (type, null) per table, from the PostgreSQL migrations (and the provider's
    own DDL for the migrations table, when it is written that way)."""
    # Migrations first; the schema.sql snapshot is a catalog dump with spelled-out type names.
    text = "".join(p.read_text("utf-8") for p in sorted(POSTGRES.glob("migrations/*.sql")))
    text += "".join(p.read_text("utf-8") for p in sorted(POSTGRES.glob("*.py")))
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for table, body in _CREATE.findall(text.replace("\\n", "\n")):
        columns: dict[str, tuple[str, str]] = {}
        keyed: set[str] = set()
        for raw in body.splitlines():
            line = raw.split("--", 1)[0].strip().rstrip(",")
            if not line:
                continue
            first = line.split()[0]
            if first in _CONSTRAINT:
                if line.startswith("PRIMARY KEY"):
                    keyed |= {c.strip() for c in line.split("(", 1)[1].rstrip(")").split(",")}
                continue
            kind = _type_of(line)
            required = "NOT NULL" in line or "PRIMARY KEY" in line
            columns[first] = (kind, "no" if required else "yes")
        for name in keyed:
            columns[name] = (columns[name][0], "no")
        out.setdefault(table, columns)
    for table, definition in _ADD_COLUMN.findall(text):
        name, kind = definition.split()[0], _type_of(definition)
        out[table][name] = (kind, "no" if "NOT NULL" in definition else "yes")
    return out


@pytest.mark.parametrize("table", TABLE_NAMES)
def test_postgres_types_and_nulls_match_the_migration(table: str) -> None:
    found = _postgres_tables()
    if not POSTGRES.exists() or table not in found:
        pytest.skip(f"no PostgreSQL DDL for {table} in this checkout")
    stated = {name_of(r[0]): (r[2], r[3]) for r in DOCUMENTED[table].rows}
    assert stated == found[table]


def test_postgres_indexes_have_the_sqlite_names() -> None:
    files = sorted(POSTGRES.glob("migrations/*.sql"))
    if not files:
        pytest.skip("no PostgreSQL migration in this checkout")
    text = "".join(f.read_text("utf-8") for f in files)
    found = set(re.findall(r"CREATE (?:UNIQUE )?INDEX (\w+)\s+ON \{schema\}\.\w+", text))
    documented = {name_of(r[0]) for t in INDEXES.values() for r in t.rows}
    assert found == documented


def test_key_parser_reads_composite_keys() -> None:
    line = "Keys: primary key `id`; unique `job_ref`; unique `(namespace_id, dedup_key)`."
    assert _KEY.findall(line) == [
        ("primary key", "id"),
        ("unique", "job_ref"),
        ("unique", "namespace_id, dedup_key"),
    ]
