"""The ledger's schema on MariaDB: migrations that survive implicit commits, checks, the dump.

MariaDB commits before and after every DDL statement, so a migration file cannot be one
transaction. Instead each statement of a file is recorded in ``migration_steps`` as it
completes (in the same transaction as the statement when it is DML); a run that failed halfway
resumes after the last recorded statement, and the file's statements are written to be safe to
run again (``IF NOT EXISTS``, ``CREATE OR REPLACE``) for the one statement whose record may have
been lost with its connection. Concurrent migrators queue on a named lock (``GET_LOCK``).

Before anything is created the server is checked: MariaDB 10.6 or later (``SKIP LOCKED``), or
MySQL 8.0.1 or later; and the ledger database must compare text byte by byte
(``utf8mb4_bin``): a case-insensitive collation would make two refs equal.
"""

from __future__ import annotations

import re
from typing import Any

from acta.errors import ConfigurationError, SchemaError
from acta.provider import migrate as migrations
from acta.provider.statements import SCHEMA_TOKEN, replace_schema

PACKAGE = "acta.provider.mariadb"
COLLATION = "utf8mb4_bin"
MINIMUM = {"mariadb": (10, 6), "mysql": (8, 0, 1)}
_LOCK_SECONDS = 60

_VERSION_TABLE = """CREATE TABLE IF NOT EXISTS {schema}.migrations (
    version    INT          NOT NULL PRIMARY KEY,
    name       VARCHAR(200) NOT NULL,
    checksum   CHAR(64)     NOT NULL,
    applied_at DATETIME(3)  NOT NULL
) ENGINE = InnoDB"""
_STEPS_TABLE = """CREATE TABLE IF NOT EXISTS {schema}.migration_steps (
    version INT NOT NULL PRIMARY KEY,
    done    INT NOT NULL
) ENGINE = InnoDB"""


def qualifier(schema: str) -> str:
    return f"`{schema}`."


def _text(template: str, schema: str) -> str:
    return replace_schema(template, qualifier(schema))


def server_version(text: str) -> tuple[str, tuple[int, ...]]:
    """``("mariadb", (10, 11, 19))`` from ``SELECT VERSION()``."""
    kind = "mariadb" if "mariadb" in text.lower() else "mysql"
    numbers = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
    found = tuple(int(n) for n in numbers.groups()) if numbers else (0,)
    return kind, found


def check_server(version: str) -> None:
    """Refuse a server without ``FOR UPDATE SKIP LOCKED`` (ConfigurationError)."""
    kind, found = server_version(version)
    needed = MINIMUM[kind]
    if found < needed:
        want = ".".join(str(n) for n in needed)
        raise ConfigurationError(
            f"acta needs {'MariaDB' if kind == 'mariadb' else 'MySQL'} {want} or later "
            f"(FOR UPDATE SKIP LOCKED); this server is {version}"
        )


def split(script: str) -> list[str]:
    """The statements of a migration file (``;`` inside quotes and comments respected)."""
    out, buf, i, n = [], [], 0, len(script)
    quote: str | None = None
    while i < n:
        c = script[i]
        if quote:
            buf.append(c)
            if c == quote:
                quote = None
        elif c in ("'", '"', "`"):
            quote = c
            buf.append(c)
        elif script.startswith("--", i):
            j = script.find("\n", i)
            i = n if j == -1 else j
            continue
        elif c == ";":
            out.append("".join(buf).strip())
            buf = []
        else:
            buf.append(c)
        i += 1
    out.append("".join(buf).strip())
    return [s for s in out if s]


def _applied(cur: Any, schema: str) -> list[tuple[int, str]] | None:
    cur.execute(
        "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
        "AND TABLE_NAME = 'migrations'",
        (schema,),
    )
    if cur.fetchone() is None:
        return None
    cur.execute(_text("SELECT version, checksum FROM {schema}.migrations ORDER BY version", schema))
    return [(int(v), str(c)) for v, c in cur.fetchall()]


def check(pool: Any, schema: str, where: str, hint: str) -> None:
    conn = pool.connect()
    try:
        with conn.cursor() as cur:
            todo = migrations.pending(migrations.load(PACKAGE), _applied(cur, schema) or [], where)
        conn.rollback()
    finally:
        conn.close()
    if todo:
        raise SchemaError(migrations.missing_message(where, todo, hint))


def _check_database(cur: Any, schema: str) -> None:
    cur.execute(
        "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME "
        "FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
        (schema,),
    )
    row = cur.fetchone()
    if row is not None and row[1] != COLLATION:
        raise ConfigurationError(
            f"the database {schema} compares text with {row[1]}, which would make refs and keys "
            f"that differ only in case or accents equal; fix it with "
            f"`ALTER DATABASE `{schema}` CHARACTER SET utf8mb4 COLLATE {COLLATION}` "
            "before applying the schema, or use another schema name"
        )


def migrate(pool: Any, schema: str, where: str, *, fail_after: int | None = None) -> list[str]:
    """Apply pending migrations statement by statement; return the names applied.
    ``fail_after`` (tests only) stops with an error after that many statements of a file."""
    available = migrations.load(PACKAGE)
    conn = pool.connect()
    done: list[str] = []
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            check_server(str(cur.fetchone()[0]))
            cur.execute("SELECT GET_LOCK(%s, %s)", (f"acta_migrate_{schema}", _LOCK_SECONDS))
            if cur.fetchone()[0] != 1:
                raise SchemaError(f"another migration of {where} held its lock for 60 s")
            try:
                _check_database(cur, schema)
                cur.execute(
                    f"CREATE DATABASE IF NOT EXISTS `{schema}` "
                    f"CHARACTER SET utf8mb4 COLLATE {COLLATION}"
                )
                cur.execute(_text(_VERSION_TABLE, schema))
                cur.execute(_text(_STEPS_TABLE, schema))
                todo = migrations.pending(available, _applied(cur, schema) or [], where)
                for m in todo:
                    _apply(conn, cur, schema, m, fail_after)
                    done.append(f"{m.version:04d}_{m.name}")
            finally:
                cur.execute("SELECT RELEASE_LOCK(%s)", (f"acta_migrate_{schema}",))
    finally:
        conn.close()
    return done


def _apply(
    conn: Any, cur: Any, schema: str, m: migrations.Migration, fail_after: int | None
) -> None:
    cur.execute(
        _text("SELECT done FROM {schema}.migration_steps WHERE version = %s", schema), (m.version,)
    )
    row = cur.fetchone()
    start = int(row[0]) if row else 0
    record = _text(
        "INSERT INTO {schema}.migration_steps (version, done) VALUES (%s, %s) "
        "ON DUPLICATE KEY UPDATE done = VALUES(done)",
        schema,
    )
    for number, statement in enumerate(split(_text(m.sql, schema)), start=1):
        if number <= start:
            continue
        if fail_after is not None and number > fail_after:
            raise SchemaError(f"stopped after statement {fail_after} of migration {m.version}")
        cur.execute(statement)
        cur.execute(record, (m.version, number))
        conn.commit()
    cur.execute(
        _text(
            "INSERT INTO {schema}.migrations (version, name, checksum, applied_at) "
            "VALUES (%s, %s, %s, UTC_TIMESTAMP(3))",
            schema,
        ),
        (m.version, m.name, m.checksum),
    )
    cur.execute(
        _text("DELETE FROM {schema}.migration_steps WHERE version = %s", schema), (m.version,)
    )
    conn.commit()


def provisioning_sql(schema: str) -> str:
    parts = [
        f"CREATE DATABASE IF NOT EXISTS `{schema}` CHARACTER SET utf8mb4 COLLATE {COLLATION};",
        _text(_VERSION_TABLE, schema) + ";",
        _text(_STEPS_TABLE, schema) + ";",
    ]
    for m in migrations.load(PACKAGE):
        parts.append(_text(m.sql, schema).rstrip())
        parts.append(
            _text(
                "INSERT INTO {schema}.migrations (version, name, checksum, applied_at) "
                f"VALUES ({m.version}, '{m.name}', '{m.checksum}', UTC_TIMESTAMP(3));",
                schema,
            )
        )
    return "\n\n".join(parts) + "\n"


def dump(pool: Any, schema: str) -> str:
    """Every table and view of the ledger database, as ``SHOW CREATE`` prints them,
    normalised (no AUTO_INCREMENT counter, no definer) with ``{schema}.`` for the name."""
    conn = pool.connect()
    out: list[str] = []
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = %s ORDER BY TABLE_TYPE, TABLE_NAME",
                (schema,),
            )
            for name, kind in cur.fetchall():
                cur.execute(f"SHOW CREATE TABLE `{schema}`.`{name}`")
                text = str(cur.fetchone()[1])
                label = "view" if kind == "VIEW" else "table"
                out.append(f"-- {label} {name}\n{_normalise(text, schema)};\n\n")
        conn.rollback()
    finally:
        conn.close()
    return "".join(out)


def _normalise(text: str, schema: str) -> str:
    text = re.sub(r" AUTO_INCREMENT=\d+", "", text)
    text = text.replace("CREATE TABLE `", f"CREATE TABLE `{schema}`.`", 1)
    text = re.sub(r"ALGORITHM=\w+ DEFINER=`[^`]*`@`[^`]*` SQL SECURITY \w+ ", "", text)
    return text.replace(f"`{schema}`.", SCHEMA_TOKEN)
