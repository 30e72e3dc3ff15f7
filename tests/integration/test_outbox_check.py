"""The outbox check (``outbox_delivered_once``, in the PostgreSQL provider's checks) can fail.

The chaos test trusts this query to judge 5,000 deliveries, so here it is shown each kind of
breakage on a small PostgreSQL run: a clean delivery answers no row, then one planted fault at
a time must be named: a lost row, a phantom job, a row both delivered and quarantined, laned
rows out of order, and a row left in the outbox.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta
from acta.outbox import OutboxSource, create_outbox
from acta_testing import Host
from anvil.checks import check_path

if TYPE_CHECKING:
    from acta_testing.schemas import PostgresSchemas

CHECK = check_path("outbox_delivered_once", "postgres")


@pytest.fixture
def world(request: pytest.FixtureRequest, acta_clock: Any) -> Iterator[dict[str, Any]]:
    """A PostgreSQL ledger and a source schema beside it, four orders delivered (two laned)."""
    psycopg = pytest.importorskip("psycopg")
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    source = f"shop_{secrets.token_hex(4)}"
    conn = psycopg.connect(schemas.dsn, autocommit=True)
    stack = contextlib.ExitStack()
    provider = stack.enter_context(schemas.provider(max_connections=4))
    ledger_schema = provider.schema
    create_outbox(conn, schema=source)
    conn.execute(
        f"CREATE TABLE {source}.orders (id bigint PRIMARY KEY, outbox_id bigint, lane text)"
    )
    app = Acta(outbox=OutboxSource(url=schemas.dsn, schema=source, name="t"))

    @app.job("order", input=int)
    def order(n: int) -> None: ...

    with psycopg.connect(schemas.dsn) as tx:
        for n in range(1, 5):
            lane = "l" if n % 2 else None
            row = app.add_to_outbox("order", n, connection=tx, outbox_schema=source, lane=lane)
            tx.execute(f"INSERT INTO {source}.orders VALUES (%s, %s, %s)", (n, row, lane))
    host = Host(app, provider, acta_clock)
    try:
        host.run_until_idle()

        def check() -> list[tuple[Any, ...]]:
            sql = (
                CHECK.read_text()
                .replace("{outbox}.", f"{source}.")
                .replace("{schema}.", f"{ledger_schema}.")
            )
            sql = sql.replace(":source", "%(source)s")
            return [tuple(r) for r in conn.execute(sql, {"source": "t"}).fetchall()]

        yield {"conn": conn, "source": source, "ledger": ledger_schema, "check": check}
    finally:
        host.close()
        stack.close()
        conn.execute(f"DROP SCHEMA {source} CASCADE")
        conn.close()


def test_a_clean_run_passes(world: dict[str, Any]) -> None:
    assert world["check"]() == []


def test_each_fault_is_named(world: dict[str, Any]) -> None:
    conn, source, ledger, check = world["conn"], world["source"], world["ledger"], world["check"]
    conn.execute(f"INSERT INTO {source}.orders VALUES (99, 999, NULL)")
    assert check() == [("lost", 999, None)]
    conn.execute(f"DELETE FROM {source}.orders WHERE id = 99")

    [kept] = conn.execute(f"SELECT * FROM {source}.orders WHERE id = 2").fetchall()
    conn.execute(f"DELETE FROM {source}.orders WHERE id = 2")
    [(problem, _, _)] = check()
    assert problem == "phantom job"
    conn.execute(f"INSERT INTO {source}.orders VALUES (%s, %s, %s)", kept)
    assert check() == []

    conn.execute(
        f"INSERT INTO {source}.acta_outbox_quarantine (outbox_id, namespace, job_name, "
        "input_codec, input, priority, tags, deadline_strict, staged_at, attempts, reason, "
        "message, quarantined_at, quarantined_by) SELECT outbox_id, 'default', 'order', 1, "
        f"'1', 0, '[]', true, now(), 0, 'rejected', 'x', now(), 'w' FROM {source}.orders "
        "WHERE id = 1"
    )
    [(problem, _, _)] = check()
    assert problem == "delivered and quarantined"
    conn.execute(f"DELETE FROM {source}.acta_outbox_quarantine")

    # Swap the lane places of the two laned jobs (orders 1 and 3).
    conn.execute(f"UPDATE {ledger}.runtime SET lane_seq = -lane_seq WHERE lane_id IS NOT NULL")
    [(problem, _, _)] = check()
    assert problem == "admitted out of order"
    conn.execute(f"UPDATE {ledger}.runtime SET lane_seq = -lane_seq WHERE lane_id IS NOT NULL")

    conn.execute(
        f"INSERT INTO {source}.acta_outbox (namespace, job_name, input_codec, input, priority, "
        "staged_at) VALUES ('default', 'order', 1, '1', 0, now())"
    )
    [(problem, _, _)] = check()
    assert problem == "still staged"
