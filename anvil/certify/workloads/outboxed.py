"""Jobs staged in an outbox and relayed into the ledger by the fleet (PostgreSQL only).

The application's side lives in a schema of its own beside the ledger's (``<ledger>_outbox``
on the same server: the relay still uses two connections and two transactions, as with two
databases): acta's ``acta_outbox`` table and an ``orders`` table of the workload's. The
producer stages its jobs there in small transactions of its own, each row next to the order
that names it; one transaction in five is rolled back, and its rows must never become jobs.
Every lab-app worker has an ``OutboxSource`` for that schema, so whichever holds the
``sys.outbox`` slot relays; kills land in its claims, deliveries and settles too.

The producer learns a delivered job's ref only once it is in the ledger: ``during`` looks for
jobs under the source's deduplication keys (``outbox:certify:<row id>``) and records each in
the expected table (must succeed) as it appears, on a connection of its own; the run is not
drained until every committed row has been seen delivered. Check ``outbox_delivered_once``:
each committed row became exactly one job (none lost, none twice, none from a rolled-back
row), and the outbox is empty.

SQLite is skipped: the source would be a second SQLite file, which the ledger's checks cannot
join; the relay there is covered by the conformance suite.
"""

from __future__ import annotations

from typing import Any

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from acta.outbox import OutboxSource, create_outbox
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload

JOB = "certify.outboxed"
SOURCE = "certify"
PER_TRANSACTION = 5
LOOK_EVERY = 0.5  # seconds between the producer's looks for delivered jobs
# Idempotent: a batch cut by a terminated session or a server restart may have written some of
# its rows (autocommit), and is written again in full on the next look.
EXPECT = (
    "INSERT INTO {ledger}.expected (job_ref, workload, outcome) "
    "VALUES (%(ref)s, %(workload)s, %(outcome)s) ON CONFLICT (job_ref) DO NOTHING"
)
DELIVERED = (
    "SELECT j.job_ref, CAST(substr(j.dedup_key, length(%(prefix)s) + 1) AS bigint) "
    "FROM {ledger}.jobs j WHERE left(j.dedup_key, length(%(prefix)s)) = %(prefix)s"
)


def source_schema(ledger_schema: str) -> str:
    """The schema holding the outbox of the run whose ledger is ``ledger_schema``."""
    return f"{ledger_schema}_outbox"


def source(dialect: str, database: str, ledger_schema: str) -> OutboxSource | None:
    """The lab app's outbox source (None on SQLite, where this workload does not run)."""
    if dialect != "postgres":
        return None
    return OutboxSource(
        url=database,
        schema=source_schema(ledger_schema),
        name=SOURCE,
        batch=100,
        poll="0.2s",
        hold="2s",  # a killed relay's rows come back soon: the run is short
    )


def setup(dialect: str, database: str, ledger_schema: str) -> None:
    """Make the outbox and the orders table, before any worker starts relaying."""
    if dialect != "postgres":
        return
    import psycopg

    schema = source_schema(ledger_schema)
    with psycopg.connect(database, autocommit=True) as conn:
        create_outbox(conn, schema=schema)
        conn.execute(
            f'CREATE TABLE IF NOT EXISTS "{schema}".orders '
            "(id bigint PRIMARY KEY, outbox_id bigint NOT NULL, lane text)"
        )


def teardown(dialect: str, database: str, ledger_schema: str) -> None:
    """Drop the outbox schema again."""
    if dialect != "postgres":
        return
    import psycopg

    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{source_schema(ledger_schema)}" CASCADE')


def register(app: Acta, sink: Sink) -> None:
    @app.job(JOB, input=int, max_attempts=100)
    def outboxed(n: int, ctx: SyncJobContext) -> int:
        sink.run(ctx)
        return n


def enqueue(ctx: Enqueueing) -> None:
    import psycopg

    schema = source_schema(ctx.ledger.schema)
    staged: set[int] = set()
    with psycopg.connect(ctx.ledger.database) as conn:  # not autocommit: our transactions
        for start in range(0, ctx.count, PER_TRANSACTION):
            rows = []
            for n in range(start, min(start + PER_TRANSACTION, ctx.count)):
                row = ctx.app.add_to_outbox(
                    JOB, n, connection=conn, outbox_schema=schema, delay=ctx.delay(n)
                )
                conn.execute(
                    f'INSERT INTO "{schema}".orders (id, outbox_id) VALUES (%s, %s)', (n, row)
                )
                rows.append(row)
            if ctx.rng.random() < 0.2:
                conn.rollback()  # neither the orders nor their rows exist
            else:
                conn.commit()
                staged.update(rows)
    ctx.state["pending"] = sorted(staged)
    ctx.state["seen"] = set()
    ctx.state["next_look"] = 0.0


def during(ctx: Enqueueing, elapsed: float) -> None:
    pending: list[int] = ctx.state.get("pending", [])
    if not pending or elapsed < ctx.state["next_look"]:
        return
    ctx.state["next_look"] = elapsed + LOOK_EVERY
    seen: set[int] = ctx.state["seen"]
    conn = _connection(ctx)
    ledger = f'"{ctx.ledger.schema}".'
    try:
        found = conn.execute(DELIVERED.replace("{ledger}.", ledger), {"prefix": PREFIX})
        new = [(str(ref), int(row)) for ref, row in found if int(row) not in seen]
        if new:
            params = [
                {"ref": ref, "workload": WORKLOAD.name, "outcome": int(JobStatus.SUCCEEDED)}
                for ref, _ in new
            ]
            with conn.cursor() as cursor:
                cursor.executemany(EXPECT.replace("{ledger}.", ledger), params)
    except Exception:
        conn.close()  # opened again on the next look
        raise
    seen.update(row for _, row in new)
    ctx.state["pending"] = [row for row in pending if row not in seen]
    if not ctx.state["pending"]:
        conn.close()  # every row seen: nothing more to look for


def _connection(ctx: Enqueueing) -> Any:
    """The workload's own connection to the ledger's server (the run's is the main loop's)."""
    import psycopg

    conn: Any = ctx.state.get("conn")
    if conn is None or conn.closed:
        conn = ctx.state["conn"] = psycopg.connect(ctx.ledger.database, autocommit=True)
    return conn


PREFIX = f"outbox:{SOURCE}:"

WORKLOAD = Workload(
    "outboxed",
    "staged in an outbox in the producer's transactions (1 in 5 rolled back), relayed by the "
    "fleet; each committed row delivered once, and must succeed",
    3,
    register,
    enqueue,
    during,
    checks=("outbox_delivered_once",),
    params={"source": SOURCE},
    most=150,
    providers=("postgres",),
    skipped_because="the outbox source would be a second SQLite file the checks cannot join",
    setup=setup,
    teardown=teardown,
)
