"""MariaDB as an outbox source: the application stages requests in its own MariaDB database
inside its transaction, and the relay delivers them to the ledger (a SQLite file here, the
integration conftest's), in lane order, quarantining a row nobody can run and requeueing it
under its old id. Skips without a MariaDB server, and fails instead under CI=true."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from acta import Acta
from acta.outbox import OutboxSource, create_outbox
from acta.provider.mariadb.connect import Target
from acta.provider.mariadb.testing import DEFAULT_DSN
from acta_testing import Host

pymysql = pytest.importorskip("pymysql")

DSN = os.environ.get("ACTA_TEST_MARIADB_DSN") or DEFAULT_DSN


def _connect(database: str | None = None) -> Any:
    kwargs = Target.parse(DSN).connect_kwargs(5)
    if database is not None:
        kwargs["database"] = database
    return pymysql.connect(**kwargs)


@pytest.fixture
def shop() -> Iterator[str]:
    """A database of the test's own holding the outbox; its name."""
    name = f"acta_t_shop_{secrets.token_hex(4)}"
    try:
        admin = _connect()
    except pymysql.err.Error as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"MariaDB must run in CI: {exc}")
        pytest.skip(f"MariaDB is not available: {exc}")
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{name}` COLLATE utf8mb4_bin")
        conn = _connect(name)
        create_outbox(conn)
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY)")
        conn.commit()
        conn.close()
        yield name
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.close()


def _left(name: str) -> int:
    conn = _connect(name)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM acta_outbox")
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def test_mariadb_source_delivers_in_lane_order_and_quarantines(
    acta_provider: Any, acta_clock: Any, shop: str
) -> None:
    ran: list[str] = []
    app = Acta(outbox=OutboxSource(url=f"mariadb://root@127.0.0.1:3306/{shop}", batch=3))

    @app.job("post")
    def post(entry: str) -> None:
        ran.append(entry)

    conn = _connect(shop)
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO orders () VALUES ()")
        for n in range(4):
            app.add_to_outbox("post", f"a{n}", connection=conn, lane="a")
        with conn.cursor() as cur:
            cur.execute(
                "INSERT INTO acta_outbox (namespace, job_name, input_codec, input, priority, "
                "staged_at, lane) VALUES ('default', 'ghost', 1, '1', 0, UTC_TIMESTAMP(3), 'a')"
            )
        app.add_to_outbox("post", "a-last", connection=conn, lane="a")
        rolled_back = app.add_to_outbox("post", "never", connection=conn)
        conn.commit()
        app.add_to_outbox("post", "never", connection=conn)
        conn.rollback()  # staged in a transaction that did not commit: never delivered
    finally:
        conn.close()
    assert rolled_back > 0
    host = Host(app, acta_provider, acta_clock)
    try:
        for _ in range(20):
            host.run_until_idle()
            if _left(shop) == 0:
                break
            host.advance("1s")
        host.run_until_idle()
        assert ran[:5] == ["a0", "a1", "a2", "a3", "a-last"]
        assert ran.count("never") == 1  # the committed one only
        desk = app.outbox_quarantine()
        [entry] = desk.entries()
        assert (entry.job_name, entry.reason) == ("ghost", "unknown_job")

        @app.job("ghost")
        def ghost(n: int) -> None:
            ran.append(f"ghost {n}")

        desk.requeue(entry.row, actor="ops")  # back in the outbox under its old id
        host.advance("1s")
        host.run_until_idle()
        assert ran[-1] == "ghost 1"
        assert _left(shop) == 0
    finally:
        host.close()
