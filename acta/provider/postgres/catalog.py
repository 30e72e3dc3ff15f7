"""The ledger's schema on PostgreSQL: migrations, the schema check, provisioning and the dump.

Migrations are forward-only files (acta.provider.migrate) recorded with their checksums in
``<schema>.migrations``. Each one is applied in its own transaction that first locks the
migrations table in EXCLUSIVE mode: concurrent migrators queue there and the second one finds
nothing left to do (no advisory locks, which a transaction-mode pooler would strand).
``dump`` rebuilds a normalised text of the catalog, with the schema name replaced by
``{schema}``, so the checked-in schema.sql can be compared with what the migrations produce.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import errors, sql

from acta.errors import SchemaError
from acta.provider import migrate as migrations
from acta.provider.statements import SCHEMA_TOKEN, replace_schema

PACKAGE = "acta.provider.postgres"
_BOOTSTRAP_ATTEMPTS = 3

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS {schema}.migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""
_LOCK = "LOCK TABLE {schema}.migrations IN EXCLUSIVE MODE"


def qualifier(schema: str) -> str:
    """``"acta".``: the quoted schema and the dot, as the SQL files expect it."""
    return sql.Identifier(schema).as_string() + "."


def _text(template: str, schema: str) -> str:
    # Only acta's own templates and migration files reach here, and the schema name was
    # validated and quoted by psycopg.
    return replace_schema(template, qualifier(schema))


def _create_schema(schema: str) -> str:
    return f"CREATE SCHEMA IF NOT EXISTS {sql.Identifier(schema).as_string()}"


def _record(schema: str, m: migrations.Migration) -> str:
    # Version, name and checksum come from the packaged file: digits, [a-z0-9_] and hex.
    return _text(
        "INSERT INTO {schema}.migrations (version, name, checksum) "
        f"VALUES ({m.version}, '{m.name}', '{m.checksum}')",
        schema,
    )


def _applied(conn: psycopg.Connection[Any], schema: str) -> list[tuple[int, str]] | None:
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", [qualifier(schema) + "migrations"]
    ).fetchone()
    if row is None or not row[0]:
        return None
    rows = conn.execute(
        _text("SELECT version, checksum FROM {schema}.migrations ORDER BY version", schema)
    ).fetchall()
    return [(int(v), str(c)) for v, c in rows]


def _end(conn: psycopg.Connection[Any]) -> None:
    """End a read-only transaction. On a connection already lost there is nothing to end, and
    trying would replace the error that says why it was lost with one that does not."""
    if not conn.closed:
        conn.rollback()


def check(conn: psycopg.Connection[Any], schema: str, where: str, hint: str) -> None:
    """Raise SchemaError naming ``hint`` when the schema is missing or behind this code."""
    try:
        todo = migrations.pending(migrations.load(PACKAGE), _applied(conn, schema) or [], where)
    finally:
        _end(conn)
    if todo:
        raise SchemaError(migrations.missing_message(where, todo, hint))


def _bootstrap(conn: psycopg.Connection[Any], schema: str) -> None:
    """Create the schema and the migrations table if missing, in a transaction of their own.

    Two sessions running CREATE ... IF NOT EXISTS at the same instant can both miss the other's
    uncommitted row and one fails on a unique index of the catalog; running again then finds
    the object and does nothing.
    """
    for attempt in range(1, _BOOTSTRAP_ATTEMPTS + 1):
        try:
            with conn.transaction():
                conn.execute(_create_schema(schema))
                conn.execute(_text(_VERSION_TABLE, schema))
            return
        except (errors.UniqueViolation, errors.DuplicateObject, errors.DuplicateTable):
            if attempt == _BOOTSTRAP_ATTEMPTS:
                raise


def migrate(conn: psycopg.Connection[Any], schema: str, where: str) -> list[str]:
    """Apply pending migrations one transaction each; return the names applied."""
    available = migrations.load(PACKAGE)
    _bootstrap(conn, schema)
    done: list[str] = []
    while True:
        with conn.transaction():
            conn.execute(_text(_LOCK, schema))
            todo = migrations.pending(available, _applied(conn, schema) or [], where)
            if not todo:
                return done
            step = todo[0]
            # A file holds several statements and no parameters: psycopg sends it as one
            # simple query, so it runs exactly as written.
            conn.execute(_text(step.sql, schema))
            conn.execute(_record(schema, step))
        done.append(f"{step.version:04d}_{step.name}")


def provisioning_sql(schema: str) -> str:
    """Everything ``migrate`` would run on an empty database, as one reviewable script."""
    parts = [
        "BEGIN;",
        _create_schema(schema) + ";",
        _text(_VERSION_TABLE, schema) + ";",
        _text(_LOCK, schema) + ";",
    ]
    for m in migrations.load(PACKAGE):
        parts.append(_text(m.sql, schema).rstrip())
        parts.append(_record(schema, m) + ";")
    parts.append("COMMIT;")
    return "\n\n".join(parts) + "\n"


# -- the catalog dump -----------------------------------------------------------------------

_COLUMNS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), a.attidentity
FROM pg_class c
JOIN pg_namespace n  ON n.oid = c.relnamespace
JOIN pg_attribute a  ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p')
ORDER BY c.relname, a.attnum
"""

# Not-null constraints (contype 'n', PostgreSQL 18+) are left out: the column lines show them,
# and the dump must read the same on every server version.
_CONSTRAINTS = """
SELECT c.relname, k.conname, pg_get_constraintdef(k.oid, true)
FROM pg_constraint k
JOIN pg_class c     ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND k.contype <> 'n'
ORDER BY c.relname, k.conname
"""

_INDEXES = """
SELECT tablename, indexname, indexdef
FROM pg_indexes
WHERE schemaname = %(schema)s
ORDER BY tablename, indexname
"""

_VIEWS = """
SELECT c.relname, pg_get_viewdef(c.oid, true)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind = 'v'
ORDER BY c.relname
"""

_FUNCTIONS = """
SELECT p.proname, pg_get_functiondef(p.oid)
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = %(schema)s
ORDER BY p.proname, p.oid
"""

_IDENTITY = {"a": " GENERATED ALWAYS AS IDENTITY", "d": " GENERATED BY DEFAULT AS IDENTITY"}


def dump(conn: psycopg.Connection[Any], schema: str) -> str:
    """The live catalog of ``schema`` as normalised SQL text, with ``{schema}.`` for the name."""
    args = {"schema": schema}
    try:
        # With only pg_catalog on the path every ledger name prints schema-qualified, whatever
        # the role's search_path; SET LOCAL ends with this transaction (no session state).
        conn.execute("SET LOCAL search_path = pg_catalog")
        columns = conn.execute(_COLUMNS, args).fetchall()
        constraints = conn.execute(_CONSTRAINTS, args).fetchall()
        indexes = conn.execute(_INDEXES, args).fetchall()
        views = conn.execute(_VIEWS, args).fetchall()
        functions = conn.execute(_FUNCTIONS, args).fetchall()
    finally:
        _end(conn)
    tables: dict[str, list[str]] = {}
    for table, column, type_, not_null, default, identity in columns:
        line = f"    {column} {type_}"
        line += _IDENTITY.get(identity, "")
        line += f" DEFAULT {default}" if default is not None else ""
        line += " NOT NULL" if not_null else ""
        tables.setdefault(table, []).append(line)
    for table, name, definition in constraints:
        tables.setdefault(table, []).append(f"    CONSTRAINT {name} {definition}")
    out: list[str] = []
    for table, lines in tables.items():
        out.append(f"-- table {table}\nCREATE TABLE {SCHEMA_TOKEN}{table} (\n")
        out.append(",\n".join(lines) + "\n);\n\n")
    for table, name, definition in indexes:
        out.append(f"-- index {name} on {table}\n{definition};\n\n")
    for name, definition in views:
        body = definition.strip().rstrip(";")
        out.append(f"-- view {name}\nCREATE VIEW {SCHEMA_TOKEN}{name} AS\n{body};\n\n")
    for name, definition in functions:
        out.append(f"-- function {name}\n{definition.strip()};\n\n")
    return _placeholder("".join(out), schema)


def _placeholder(text: str, schema: str) -> str:
    """Replace the schema qualifier (quoted or not) with ``{schema}.``."""
    pattern = rf'(?<![\w"$])(?:"{re.escape(schema)}"|{re.escape(schema)})\.'
    return re.sub(pattern, SCHEMA_TOKEN, text)
