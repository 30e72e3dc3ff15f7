"""The outbox relay under SIGKILL: thousands of staged rows, each delivered once or quarantined.

On PostgreSQL the ledger is one schema and the application's database another schema of the
same server (the relay still treats them as two databases: two connections, two
transactions). The test process stages 5,000 rows (more, up to 20,000, while kills are still
due, so a relay that keeps up cannot finish first) in small transactions, each next to an
``orders`` row saying which outbox row it staged: about one in ten names one of eight lanes,
and every 250th names a job no worker knows (the relay must quarantine it). Meanwhile two
worker processes run with the outbox source; every 1 to 2 s (eight times) the one holding
the ``sys.outbox`` slot is SIGKILLed and a replacement started, so kills land before, inside and
between the claim, the ledger commit and the source delete. Jobs are staged to run an hour
later, so the workers only relay: delivery is what is judged.

At the end the SQL check kept in the repository,
``outbox_delivered_once`` (anvil.checks, PostgreSQL's file), must return no row: every order's row
is exactly once a ledger job or an undecided quarantine entry, no job came from nowhere, laned
rows took their places in their ledger lanes in staging order, and ``acta_outbox`` is empty.

The test waits only on its children's output and on the databases, with deadlines.
"""

from __future__ import annotations

import random
import secrets
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from acta.outbox import create_outbox
from anvil.checks import check_path
from chaos.durable_support import Ledger, clock, open_ledger, pump, reap, tail
from chaos.process import Child, spawn_worker

pytestmark = pytest.mark.chaos

ROWS = 5000  # at least; staging goes on until the kills have landed (up to MAX_ROWS)
MAX_ROWS = 20_000
PER_TX = 50
LANES = 8
GHOST_EVERY = 250
SETTINGS = {"heartbeat": 0.2, "poll": 0.05, "executors": 2, "shutdown_grace": 1.0}
DEADLINE = 90.0
KILLS = 8  # then the survivors drain what is left
CHECK = check_path("outbox_delivered_once", "postgres")

APP = textwrap.dedent(
    """
    import os
    from acta import Acta
    from acta.outbox import OutboxSource

    source = OutboxSource(
        url=os.environ["ACTA_DATABASE"], schema=os.environ["OUTBOX_SCHEMA"], name="chaos",
        batch=250, poll="0.05s", hold="1.5s",
    )
    app = Acta(os.environ["ACTA_DATABASE"], schema=os.environ["ACTA_SCHEMA"], outbox=source)

    @app.job("chaos.order", input=int)
    def order(n: int) -> None:
        raise AssertionError("staged to run an hour later: never runs during the test")
    """
)

RELAY_PID = (
    "SELECT w.pid FROM {schema}.runtime r JOIN {schema}.jobs j ON j.id = r.job_id "
    "JOIN {schema}.workers w ON w.id = r.lease_owner "
    "WHERE j.dedup_key = 'sys.outbox' AND r.status = 21"
)

SLOT = (
    "SELECT r.status, r.next_run_at, r.attempts, r.executions FROM {schema}.runtime r "
    "JOIN {schema}.jobs j ON j.id = r.job_id WHERE j.dedup_key = 'sys.outbox'"
)


@pytest.fixture
def source_schema(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A schema of the test's own holding the outbox and the orders table: (dsn, name)."""
    import psycopg

    from acta_testing.schemas import PostgresSchemas

    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    name = f"shop_{secrets.token_hex(4)}"
    with psycopg.connect(schemas.dsn, autocommit=True) as admin:
        create_outbox(admin, schema=name)
        admin.execute(
            f"CREATE TABLE {name}.orders (id bigint PRIMARY KEY, outbox_id bigint NOT NULL, "
            "lane text)"
        )
        try:
            yield schemas.dsn, name
        finally:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


def _stage(conn: Any, app: Acta, schema: str, start: int, rng: random.Random) -> None:
    """Stage orders ``start`` .. ``start + PER_TX - 1`` in one transaction."""
    with conn.transaction():
        for n in range(start, start + PER_TX):
            lane = f"lane-{rng.randrange(LANES)}" if rng.random() < 0.1 else None
            if n % GHOST_EVERY == 0:
                # Another version of the application staged a job this one does not know.
                row = conn.execute(
                    f"INSERT INTO {schema}.acta_outbox (namespace, job_name, input_codec, input, "
                    "priority, staged_at, lane) VALUES ('default', 'chaos.ghost', 1, %s, 0, "
                    "now(), %s) RETURNING id",
                    (str(n).encode(), lane),
                ).fetchone()
                outbox_id = row[0]
            else:
                outbox_id = app.add_to_outbox(
                    "chaos.order", n, connection=conn, outbox_schema=schema, lane=lane, delay="1h"
                )
            conn.execute(
                f"INSERT INTO {schema}.orders (id, outbox_id, lane) VALUES (%s, %s, %s)",
                (n, outbox_id, lane),
            )


def test_outbox_rows_survive_killed_relays(
    request: pytest.FixtureRequest, tmp_path: Path, source_schema: tuple[str, str]
) -> None:
    import psycopg

    dsn, outbox = source_schema
    rng = random.Random(11)
    with open_ledger(request, tmp_path, "postgres") as ledger:
        (tmp_path / "outbox_app.py").write_text(APP)
        env = {"ACTA_DATABASE": dsn, "ACTA_SCHEMA": ledger.schema, "OUTBOX_SCHEMA": outbox}
        count = 0

        def spawn() -> Child:
            nonlocal count
            count += 1
            return spawn_worker(f"w{count}", tmp_path, "outbox_app:app", env, **SETTINGS)

        stager = Acta(dsn, schema=ledger.schema)

        @stager.job("chaos.order", input=int)
        def order(n: int) -> None: ...

        workers = [spawn(), spawn()]
        kills = 0
        try:
            deadline = clock.monotonic() + DEADLINE
            next_kill = clock.monotonic() + rng.uniform(1.0, 2.0)
            staged = 0
            with psycopg.connect(dsn) as conn:
                while True:
                    # A relay that keeps up with the stager must not finish before the kills do:
                    # staging continues past ROWS until they have all landed.
                    if staged < ROWS or (kills < KILLS and staged < MAX_ROWS):
                        _stage(conn, stager, outbox, staged + 1, rng)
                        staged += PER_TX
                    else:
                        pump(workers, 0.05)
                        if _left(ledger, outbox) == 0:
                            break
                    if clock.monotonic() > deadline:
                        raise AssertionError(
                            f"{_left(ledger, outbox)} rows still staged after {DEADLINE} s "
                            f"({kills} kills); relay slot {ledger.rows(SLOT)}\n{tail(workers)}"
                        )
                    if kills < KILLS and clock.monotonic() >= next_kill:
                        victim = _relay(ledger, workers)
                        if victim is not None:
                            victim.kill()
                            workers.remove(victim)
                            workers.append(spawn())
                            kills += 1
                        next_kill = clock.monotonic() + rng.uniform(1.0, 2.0)
                        pump(workers, 0)
        finally:
            reap(workers)
        print(
            f"{kills} kills, {staged} rows; done in {clock.monotonic() - deadline + DEADLINE:.1f} s"
        )
        assert kills >= 4, f"only {kills} kills: the relay finished before the test could bite"
        problems = ledger.rows(CHECK.read_text().replace("{outbox}.", f"{outbox}."), source="chaos")
        assert problems == [], problems[:20]
        quarantined = ledger.value(
            f"SELECT count(*) FROM {outbox}.acta_outbox_quarantine WHERE reason = 'unknown_job'"
        )
        assert quarantined == staged // GHOST_EVERY
        assert ledger.value(f"SELECT count(*) FROM {outbox}.orders") == staged


def _left(ledger: Ledger, outbox: str) -> int:
    return int(ledger.value(f"SELECT count(*) FROM {outbox}.acta_outbox"))


def _relay(ledger: Ledger, workers: list[Child]) -> Child | None:
    """The live worker process running the relay now, if any."""
    pids = {row[0] for row in ledger.rows(RELAY_PID)}
    for worker in workers:
        if worker.pid in pids and worker.process.poll() is None:
            return worker
    return None
