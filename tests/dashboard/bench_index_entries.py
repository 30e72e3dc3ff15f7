"""How many runtime index entries one plain job writes, per index (docs/internals/write-budget.md).

    python -m tests.dashboard.bench_index_entries [--jobs 1000] [--dsn postgresql://...]

``python -m anvil.budget`` counts rows and statements; an index entry is neither, and a
B-tree's own cleanup hides dead ones from a count of its pages. So this reads the WAL
(``pg_walinspect``, PostgreSQL 15+): in a database of its own, it enqueues ``--jobs`` jobs
one call each, drains them with one worker of 16 executors, and counts the B-tree leaf
insertions (``INSERT_LEAF``, ``INSERT_POST`` and leaf-level splits, which log their new
tuple themselves) into each of runtime's indexes, per phase. Not a test: it needs a
superuser and creates and drops a database.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections import Counter

import psycopg

from acta import Acta

DATABASE = "acta_index_entries"
SCHEMA = "bench"
_LEAF_SPLIT = re.compile(r"level:? 0\b")
_RELATION = re.compile(r"rel \d+/\d+/(\d+)")


def _insertions(dsn: str, start: str, end: str) -> Counter[str]:
    """B-tree leaf insertions into runtime's indexes between two WAL positions."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        indexes = dict(
            conn.execute(
                "SELECT pg_relation_filenode(indexrelid)::text, indexrelid::regclass::text "
                f"FROM pg_index WHERE indrelid = '{SCHEMA}.runtime'::regclass"
            ).fetchall()
        )
        records = conn.execute(
            "SELECT record_type, description, block_ref FROM pg_get_wal_records_info(%s, %s) "
            "WHERE resource_manager = 'Btree'",
            (start, end),
        ).fetchall()
    counts: Counter[str] = Counter()
    for kind, description, blocks in records:
        leaf = kind in ("INSERT_LEAF", "INSERT_POST") or (
            kind in ("SPLIT_L", "SPLIT_R") and bool(_LEAF_SPLIT.search(description or ""))
        )
        found = _RELATION.search(blocks or "")
        if leaf and found and found.group(1) in indexes:
            counts[indexes[found.group(1)].split(".")[-1]] += 1
    return counts


def _position(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    assert row is not None
    return str(row[0])


async def _drain(app: Acta, dsn: str, jobs: int) -> None:
    worker = app.worker(executors=16)
    stopping = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stopping))
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            row = conn.execute(
                f"SELECT count(*) FROM {SCHEMA}.runtime r "
                f"JOIN {SCHEMA}.definitions d ON d.id = r.definition_id "
                "WHERE d.name = 'bench.plain' AND r.status = 100"
            ).fetchone()
            if row is not None and row[0] >= jobs:
                break
            await asyncio.sleep(0.2)
    stopping.set()
    await serving


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--jobs", type=int, default=1000)
    args = parser.parse_args()
    dsn = args.dsn.rsplit("/", 1)[0] + "/" + DATABASE
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_walinspect")
        app = Acta(dsn, schema=SCHEMA, apply_migrations=True)
        app.migrate()

        def plain(n: int) -> int:
            return n

        app.job("bench.plain")(plain)
        before = _position(dsn)
        for n in range(args.jobs):
            app.enqueue("bench.plain", n)
        enqueued = _position(dsn)
        asyncio.run(_drain(app, dsn, args.jobs))
        drained = _position(dsn)
        enqueue = _insertions(dsn, before, enqueued)
        drain = _insertions(dsn, enqueued, drained)
        print(f"runtime index entries per job ({args.jobs} jobs, one enqueue call each):")
        for name in sorted(set(enqueue) | set(drain)):
            print(
                f"  {name:20} enqueue {enqueue[name] / args.jobs:6.3f}"
                f"   drain {drain[name] / args.jobs:6.3f}"
            )
        print(
            f"  {'total':20} enqueue {sum(enqueue.values()) / args.jobs:6.3f}"
            f"   drain {sum(drain.values()) / args.jobs:6.3f}"
        )
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


if __name__ == "__main__":
    main()
