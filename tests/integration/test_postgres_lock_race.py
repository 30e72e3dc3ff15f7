"""Two takers of one lock at once: the second sees the first as its holder (PostgreSQL, where
two takers run concurrently).

Found by chaos/test_locks_sigkill in a CI run: after a killed holder, two waiters raced for its
lock. The first locked the row, took it and committed; the second, which had waited for the
row lock, re-checked the new row version against the runtime row it had already joined (the
dead holder's), found no match in its LEFT JOIN, and read the lock as free, so it took it too:
two runs inside one section. ``lock_of`` now reads the holder by subqueries.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta
from acta_testing import Host

if TYPE_CHECKING:
    import psycopg

    from acta.provider.postgres import PostgresProvider
    from acta_testing.schemas import PostgresSchemas


@pytest.fixture
def acta_provider(request: pytest.FixtureRequest) -> Iterator[PostgresProvider]:
    """This module always runs on PostgreSQL."""
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    with schemas.provider() as provider:
        yield provider


@pytest.fixture
def dsn(request: pytest.FixtureRequest) -> str:
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    return schemas.dsn


def _run(
    conn: psycopg.Connection[Any], provider: PostgresProvider, statement_name: str, /, **params: Any
) -> Any:
    statement = provider.statements[statement_name]
    return conn.execute(statement.sql, {key: params.get(key) for key in statement.params})


def test_a_taker_that_waited_for_the_lock_row_sees_the_new_live_holder(
    acta_app: Acta, acta_host: Host, acta_provider: PostgresProvider, dsn: str
) -> None:
    import psycopg

    acta_app.define("locked")
    acta_host.advance(0)  # the worker registers
    dead, first, second = (acta_app.enqueue("locked") for _ in range(3))
    ids = {ref: acta_app.get(ref).job_id for ref in (dead, first, second)}
    schema = acta_provider.schema
    with psycopg.connect(dsn, autocommit=True) as admin:
        # The two takers run (status 21 at epoch 1); the old holder's run is over (ready).
        admin.execute(
            f'UPDATE "{schema}".runtime SET status = 21, lease_epoch = 1, '
            "lease_owner = %s, lease_expires_at = now() + interval '1 minute' "
            "WHERE job_id = ANY(%s)",
            (acta_host.worker.worker_id, [ids[first], ids[second]]),
        )
        (namespace_id,) = admin.execute(
            f'SELECT namespace_id FROM "{schema}".runtime WHERE job_id = %s', (ids[dead],)
        ).fetchone()
        admin.execute(
            f'INSERT INTO "{schema}".locks (namespace_id, name, holder_job_id, holder_epoch, '
            "since) VALUES (%s, 'hot', %s, 0, now())",
            (namespace_id, ids[dead]),
        )
        key = {"namespace_id": namespace_id, "name": "hot"}

        with psycopg.connect(dsn) as one, psycopg.connect(dsn) as two:
            row = _run(one, acta_provider, "lock_of", **key).fetchone()
            assert row[0] == ids[dead] and not row[-1]  # the old holder no longer holds it
            taken = _run(
                one,
                acta_provider,
                "lock_take",
                **key,
                job_id=ids[first],
                epoch=1,
                prev_job_id=ids[dead],
                prev_epoch=0,
            ).rowcount
            assert taken == 1

            seen: list[Any] = []
            waiter = threading.Thread(
                target=lambda: seen.append(_run(two, acta_provider, "lock_of", **key).fetchone())
            )
            waiter.start()
            pid = two.info.backend_pid
            blocked = threading.Event()
            for _ in range(500):  # up to 5 s for the second taker to queue on the row lock
                (waiting,) = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE pid = %s AND wait_event_type = 'Lock'",
                    (pid,),
                ).fetchone()
                if waiting:
                    break
                blocked.wait(0.01)
            assert waiting, "the second taker never waited for the lock row"
            one.commit()
            waiter.join(timeout=10)
            assert not waiter.is_alive()
            two.rollback()

    holder, held = seen[0][0], seen[0][-1]
    assert holder == ids[first]
    assert held, "a waiting taker read the new, live holder as gone: it could take the lock"
