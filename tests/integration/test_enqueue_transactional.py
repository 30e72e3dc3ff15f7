"""Enqueue inside the caller's own sqlite3 transaction: the job commits or rolls back with it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from typing import TYPE_CHECKING

import pytest

from acta import Acta, ConfigurationError, JobNotFoundError, JobRef, JobStatus
from acta.provider.protocol import Provider
from acta_testing import Host

if TYPE_CHECKING:
    from conftest import Ledger


@pytest.fixture
def orders(acta_provider: Provider, ledger: Ledger) -> str:
    """The application's own table, in the ledger's file."""
    ledger.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)")
    return "orders"


@pytest.fixture
def autocommit_conn(acta_provider: Provider, orders: str) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(acta_provider.path, isolation_level=None)) as conn:  # type: ignore[attr-defined]
        yield conn


@pytest.fixture
def implicit_conn(acta_provider: Provider, orders: str) -> Iterator[sqlite3.Connection]:
    """Python's default mode: the driver opens a transaction before the first DML."""
    with closing(sqlite3.connect(acta_provider.path)) as conn:  # type: ignore[attr-defined]
        assert conn.isolation_level == ""
        yield conn


def _declare(app: Acta, ran: list[str]) -> None:
    @app.job("confirm-order")
    def confirm(item: str) -> str:
        ran.append(item)
        return f"confirmed {item}"


def _exists(app: Acta, ref: JobRef) -> bool:
    try:
        app.get(ref)
    except JobNotFoundError:
        return False
    return True


def test_rollback_drops_both_the_row_and_the_job(
    acta_app: Acta, acta_host: Host, autocommit_conn: sqlite3.Connection, ledger: Ledger
) -> None:
    ran: list[str] = []
    _declare(acta_app, ran)
    conn = autocommit_conn
    conn.execute("BEGIN")
    conn.execute("INSERT INTO orders (item) VALUES ('lamp')")
    ref = acta_app.enqueue("confirm-order", "lamp", connection=conn)
    # Inside the transaction the job is there, on the caller's connection.
    assert conn.execute("SELECT count(*) FROM acta_jobs WHERE job_ref = ?", (str(ref),)).fetchone()
    assert conn.in_transaction
    conn.execute("ROLLBACK")

    assert ledger.value("SELECT count(*) FROM orders") == 0
    assert ledger.user_jobs() == 0 and ledger.count("events") == 0
    assert not _exists(acta_app, ref)
    assert acta_host.tick() == "nothing-claimed"
    assert ran == []


def test_commit_keeps_both_and_the_job_runs(
    acta_app: Acta, acta_host: Host, autocommit_conn: sqlite3.Connection, ledger: Ledger
) -> None:
    ran: list[str] = []
    _declare(acta_app, ran)
    conn = autocommit_conn
    conn.execute("BEGIN")
    conn.execute("INSERT INTO orders (item) VALUES ('desk')")
    first, second = acta_app.enqueue_batch(
        [acta_app.request("confirm-order", "desk"), acta_app.request("confirm-order", "chair")],
        connection=conn,
    )
    # Not visible to anyone else before the commit.
    assert ledger.user_jobs() == 0
    conn.execute("COMMIT")

    assert ledger.rows("SELECT item FROM orders") == [("desk",)]
    assert ledger.user_jobs() == 2
    assert acta_app.get(first).status is JobStatus.READY
    assert acta_host.event_names(first) == ["enqueued"]
    assert acta_host.tick() == "completed"
    assert acta_host.tick() == "completed"
    assert ran == ["desk", "chair"]
    assert acta_app.result(second) == "confirmed chair"


def test_enqueue_without_an_open_transaction_commits_on_its_own(
    acta_app: Acta, acta_host: Host, autocommit_conn: sqlite3.Connection
) -> None:
    ran: list[str] = []
    _declare(acta_app, ran)
    ref = acta_app.enqueue("confirm-order", "rug", connection=autocommit_conn)
    assert not autocommit_conn.in_transaction
    assert _exists(acta_app, ref)
    assert acta_host.tick() == "completed"


def test_failed_enqueue_leaves_the_callers_transaction_usable(
    acta_app: Acta, acta_host: Host, autocommit_conn: sqlite3.Connection, ledger: Ledger
) -> None:
    ran: list[str] = []
    _declare(acta_app, ran)
    ledger.execute(
        "CREATE TRIGGER refuse_poison BEFORE INSERT ON acta_jobs WHEN NEW.dedup_key = 'poison' "
        "BEGIN SELECT RAISE(ABORT, 'poison row refused'); END"
    )
    conn = autocommit_conn
    conn.execute("BEGIN")
    conn.execute("INSERT INTO orders (item) VALUES ('vase')")
    with pytest.raises(sqlite3.IntegrityError):
        acta_app.enqueue_batch(
            [
                acta_app.request("confirm-order", "vase"),
                acta_app.request("confirm-order", "vase", dedup_key="poison"),
            ],
            connection=conn,
        )
    # The batch is undone as a whole; the caller's own row is untouched and can commit.
    assert conn.in_transaction
    assert conn.execute("SELECT count(*) FROM acta_jobs").fetchone() == (0,)
    conn.execute("COMMIT")
    assert ledger.rows("SELECT item FROM orders") == [("vase",)]
    assert ledger.user_jobs() == 0


@pytest.mark.parametrize("enqueue_first", [False, True], ids=["row-first", "job-first"])
def test_implicit_transaction_rollback(
    acta_app: Acta,
    acta_host: Host,
    implicit_conn: sqlite3.Connection,
    ledger: Ledger,
    enqueue_first: bool,
) -> None:
    ran: list[str] = []
    _declare(acta_app, ran)
    conn = implicit_conn
    if enqueue_first:
        ref = acta_app.enqueue("confirm-order", "sofa", connection=conn)
        conn.execute("INSERT INTO orders (item) VALUES ('sofa')")
    else:
        conn.execute("INSERT INTO orders (item) VALUES ('sofa')")
        ref = acta_app.enqueue("confirm-order", "sofa", connection=conn)
    assert conn.in_transaction
    conn.rollback()

    assert ledger.value("SELECT count(*) FROM orders") == 0
    assert ledger.user_jobs() == 0
    assert not _exists(acta_app, ref)
    assert acta_host.tick() == "nothing-claimed"


@pytest.mark.parametrize("enqueue_first", [False, True], ids=["row-first", "job-first"])
def test_implicit_transaction_commit(
    acta_app: Acta,
    acta_host: Host,
    implicit_conn: sqlite3.Connection,
    ledger: Ledger,
    enqueue_first: bool,
) -> None:
    ran: list[str] = []
    _declare(acta_app, ran)
    conn = implicit_conn
    if enqueue_first:
        ref = acta_app.enqueue("confirm-order", "bed", connection=conn)
        conn.execute("INSERT INTO orders (item) VALUES ('bed')")
    else:
        conn.execute("INSERT INTO orders (item) VALUES ('bed')")
        ref = acta_app.enqueue("confirm-order", "bed", connection=conn)
    assert ledger.user_jobs() == 0  # nothing visible before the commit
    conn.commit()

    assert ledger.rows("SELECT item FROM orders") == [("bed",)]
    assert acta_app.get(ref).status is JobStatus.READY
    assert acta_host.tick() == "completed"
    assert ran == ["bed"]


def test_a_connection_of_another_kind_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    ran: list[str] = []
    _declare(acta_app, ran)
    with pytest.raises(ConfigurationError, match=r"sqlite3\.Connection"):
        acta_app.enqueue("confirm-order", "lamp", connection=object())
    assert ledger.user_jobs() == 0
