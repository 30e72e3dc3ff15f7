"""The MariaDB provider on a real server, whatever ``--acta-provider`` says: migrations that
resume after a failure halfway, the checks of the server and the database, strict sessions,
retries on the server's own deadlock and lock-wait errors, and enqueue in a caller's
transaction (a PyMySQL connection, a SQLAlchemy Session).

The server is ``$ACTA_TEST_MARIADB_DSN`` or the local default; without one these tests skip,
and under CI=true a skip is a failure.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acta import Acta, EventCode, JobNotFoundError, JobRef
from acta.errors import ConfigurationError, SchemaError
from acta.provider.mariadb import ENTRY
from acta.provider.mariadb.connect import Target, retry_kind
from acta.provider.mariadb.migrate import check_server
from acta.provider.mariadb.migrate import migrate as run_migrations
from acta.provider.mariadb.testing import DEFAULT_DSN, MariadbDatabases, MariadbUnavailable
from acta.provider.migrate import load as load_migrations

pymysql = pytest.importorskip("pymysql")

DSN = os.environ.get("ACTA_TEST_MARIADB_DSN") or DEFAULT_DSN


@pytest.fixture(scope="module")
def databases() -> Iterator[MariadbDatabases]:
    try:
        found = MariadbDatabases(DSN, "mdb")
    except MariadbUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"MariaDB must run in CI: {exc}")
        pytest.skip(str(exc))
    yield found
    assert found.finish() == []


@pytest.fixture
def acta_provider(databases: MariadbDatabases, tmp_path: Path) -> Iterator[Any]:
    """This module's ledger is always MariaDB."""
    with databases.ledger(tmp_path) as provider:
        yield provider


@pytest.fixture
def admin(databases: MariadbDatabases) -> Iterator[Any]:
    conn = pymysql.connect(**(Target.parse(DSN).connect_kwargs(5) | {"autocommit": True}))
    yield conn
    conn.close()


@pytest.fixture
def fresh_name(admin: Any) -> Iterator[str]:
    name = f"acta_t_{secrets.token_hex(3)}_fresh"
    yield name
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


def _rows(admin: Any, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    with admin.cursor() as cur:
        cur.execute(sql, params)
        return list(cur.fetchall())


# -- bad input ---------------------------------------------------------------------------------


def test_a_mariadb_url_without_the_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymysql", None)  # import pymysql now raises ImportError
    with pytest.raises(ConfigurationError, match=r"MariaDB support needs the mariadb extra"):
        ENTRY.open("mariadb://root@127.0.0.1:3306/test")


def test_mysql_and_mariadb_urls_both_belong_to_the_provider() -> None:
    assert ENTRY.accepts("mysql://u:p@db:3307/jobs") and ENTRY.accepts("mariadb://db/jobs")
    assert not ENTRY.accepts("postgresql://db/jobs")
    provider = ENTRY.open("mysql://someone:secret@db:3307/jobs")
    try:
        assert provider.where == "MariaDB db:3307 (database acta)"
        assert "secret" not in provider.apply_hint()  # type: ignore[attr-defined]
    finally:
        provider.close()


@pytest.mark.parametrize(
    ("version", "refused"),
    [
        ("10.5.27-MariaDB", True),
        ("10.6.0-MariaDB-log", False),
        ("10.11.19-MariaDB-0+deb12u1", False),
        ("8.0.0", True),
        ("8.0.36", False),
        ("5.7.44-log", True),
    ],
)
def test_a_server_without_skip_locked_is_refused_with_the_version_found(
    version: str, refused: bool
) -> None:
    if not refused:
        check_server(version)
        return
    with pytest.raises(ConfigurationError, match="SKIP LOCKED") as caught:
        check_server(version)
    assert version in str(caught.value)


def test_a_database_that_ignores_case_is_refused_with_the_fix(admin: Any, fresh_name: str) -> None:
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{fresh_name}` COLLATE utf8mb4_general_ci")
    provider = ENTRY.open(DSN, schema=fresh_name)
    try:
        with pytest.raises(ConfigurationError, match="ALTER DATABASE") as caught:
            provider.migrate()
        assert "utf8mb4_general_ci" in str(caught.value)
    finally:
        provider.close()
    tables = _rows(
        admin,
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
        (fresh_name,),
    )
    assert tables == [(0,)]  # nothing was created


def test_acta_sessions_refuse_a_value_too_long_instead_of_truncating(acta_provider: Any) -> None:
    conn = acta_provider.pool.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")  # what a lax server default would be
            conn.ping()  # a reconnect runs init_command again; a live session keeps its mode
            cur.execute("SELECT @@SESSION.sql_mode")
        fresh = acta_provider.pool.connect()
        with fresh.cursor() as cur:
            cur.execute("SELECT @@SESSION.sql_mode, @@SESSION.time_zone")
            mode, zone = cur.fetchone()
            assert "STRICT_ALL_TABLES" in mode and zone == "+00:00"
            with pytest.raises(pymysql.err.DataError):
                cur.execute(
                    f"INSERT INTO `{acta_provider.schema}`.namespaces (name, created_at) "
                    "VALUES (REPEAT('x', 300), UTC_TIMESTAMP(3))"
                )
        fresh.close()
    finally:
        conn.close()


# -- migrations --------------------------------------------------------------------------------


def test_a_migration_that_failed_halfway_resumes_where_it_stopped(
    admin: Any, fresh_name: str, databases: MariadbDatabases
) -> None:
    provider = ENTRY.open(DSN, schema=fresh_name)
    try:
        with pytest.raises(SchemaError, match="stopped after statement 12"):
            run_migrations(provider.pool, fresh_name, provider.where, fail_after=12)  # type: ignore[attr-defined]
        steps = _rows(admin, f"SELECT version, done FROM `{fresh_name}`.migration_steps")
        assert steps == [(1, 12)]
        assert _rows(admin, f"SELECT COUNT(*) FROM `{fresh_name}`.migrations") == [(0,)]
        # The record of the last statement may be lost with its connection: that statement
        # runs again, and is written to be safe to.
        with admin.cursor() as cur:
            cur.execute(f"UPDATE `{fresh_name}`.migration_steps SET done = 11")
        every = [f"{m.version:04d}_{m.name}" for m in load_migrations("acta.provider.mariadb")]
        assert provider.migrate() == every
        assert provider.migrate() == []
        assert _rows(admin, f"SELECT COUNT(*) FROM `{fresh_name}`.migration_steps") == [(0,)]
        resumed = provider.dump_schema()
    finally:
        provider.close()
    clean = ENTRY.open(DSN, schema=databases.take())
    try:
        assert resumed.replace(fresh_name, "x") == clean.dump_schema().replace(clean.schema, "x")
    finally:
        clean.close()


# -- retries -----------------------------------------------------------------------------------


def _refuse(admin: Any, schema: str, table: str, times: int, errno: int) -> None:
    """Make inserts into ``table`` fail ``times`` times with the server's ``errno``. A sequence
    counts them: NEXTVAL is not undone by the rollback that follows each failure."""
    with admin.cursor() as cur:
        cur.execute(f"CREATE SEQUENCE `{schema}`.flaky_count")
        cur.execute(
            f"CREATE TRIGGER `{schema}`.flaky BEFORE INSERT ON `{schema}`.`{table}` "
            f"FOR EACH ROW BEGIN IF NEXTVAL(`{schema}`.flaky_count) <= {times} THEN "
            f"SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = {errno}, "
            f"MESSAGE_TEXT = 'simulated {errno}'; END IF; END"
        )


def _undo(admin: Any, schema: str) -> None:
    with admin.cursor() as cur:
        cur.execute(f"DROP TRIGGER IF EXISTS `{schema}`.flaky")
        cur.execute(f"DROP SEQUENCE IF EXISTS `{schema}`.flaky_count")


@pytest.mark.parametrize("errno", [1213, 1205])
def test_a_deadlock_or_lock_wait_timeout_runs_the_verb_again(
    acta_app: Acta, acta_provider: Any, admin: Any, errno: int
) -> None:
    @acta_app.job("flaky-insert")
    def job() -> None:
        pass

    _refuse(admin, acta_provider.schema, "events", 2, errno)
    try:
        ref = job.enqueue()
    finally:
        _undo(admin, acta_provider.schema)
    codes = [e.code for e in acta_app.events(ref)]
    assert codes == [EventCode.ENQUEUED]  # once, although the verb ran three times


def test_errors_outlasting_the_attempts_fail_with_nothing_written(
    acta_app: Acta, acta_provider: Any, admin: Any
) -> None:
    @acta_app.job("always-deadlocked")
    def job() -> None:
        pass

    _refuse(admin, acta_provider.schema, "events", 100, 1213)
    try:
        with pytest.raises(pymysql.err.OperationalError):
            job.enqueue()
    finally:
        _undo(admin, acta_provider.schema)
    assert _rows(admin, f"SELECT COUNT(*) FROM `{acta_provider.schema}`.jobs") == [(0,)]


def test_retry_classification() -> None:
    err = pymysql.err
    assert retry_kind(err.OperationalError(1213, "Deadlock found")) == "retry"
    assert retry_kind(err.OperationalError(1205, "Lock wait timeout exceeded")) == "retry"
    assert retry_kind(err.OperationalError(2013, "Lost connection")) == "reconnect"
    assert retry_kind(err.OperationalError(2006, "MySQL server has gone away")) == "reconnect"
    assert retry_kind(err.InterfaceError(0, "")) == "reconnect"
    assert retry_kind(err.IntegrityError(1062, "Duplicate entry")) is None
    assert retry_kind(ValueError("not a driver error")) is None


# -- a caller's transaction --------------------------------------------------------------------


def _exists(app: Acta, ref: JobRef) -> bool:
    try:
        app.get(ref)
    except JobNotFoundError:
        return False
    return True


def test_a_pymysql_transaction_decides_for_the_job(acta_app: Acta, acta_provider: Any) -> None:
    @acta_app.job("confirm-order")
    def confirm(item: str) -> str:
        return item

    conn = pymysql.connect(**acta_provider.target.connect_kwargs(5))
    try:
        lost = confirm.enqueue("lost", connection=conn)
        conn.rollback()
        kept = confirm.enqueue("kept", connection=conn)
        assert not _exists(acta_app, kept)  # not committed yet: invisible to acta's own reads
        conn.commit()
    finally:
        conn.close()
    assert not _exists(acta_app, lost)
    assert _exists(acta_app, kept)


def test_a_sqlalchemy_session_decides_for_the_job(acta_app: Acta, acta_provider: Any) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy.orm import Session

    @acta_app.job("confirm-order")
    def confirm(item: str) -> str:
        return item

    target = acta_provider.target
    engine = sqlalchemy.create_engine(
        f"mysql+pymysql://{target.user}@{target.host}:{target.port}/{target.database or ''}"
    )
    try:
        with Session(engine) as session:
            lost = confirm.enqueue("lost", connection=session)
            session.rollback()
            kept = confirm.enqueue("kept", connection=session)
            session.commit()
    finally:
        engine.dispose()
    assert not _exists(acta_app, lost)
    assert _exists(acta_app, kept)
