"""Query plans of the dashboard's statements on PostgreSQL: capture the statements a read
runs (through a ``LedgerHook``, with their real parameters) and EXPLAIN each one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from acta import Acta
from acta.provider.verb import Op

BIG_TABLES = ("jobs", "runtime", "events")


class _Recorder:
    def __init__(self) -> None:
        self.ops: list[Op] = []

    def statement(self, op: Op, seconds: float) -> None:
        self.ops.append(op)

    def verb(self, name: str, seconds: float, error: BaseException | None) -> None:
        return None


@contextmanager
def _recording(app: Acta) -> Iterator[_Recorder]:
    recorder = _Recorder()
    app.ledger.hooks.append(recorder)
    try:
        yield recorder
    finally:
        app.ledger.hooks.remove(recorder)


def capture_ops(app: Acta, read: Callable[[], object]) -> list[Op]:
    """The dashboard statements (``dash_*``) ``read()`` runs, once each, in order."""
    with _recording(app) as recorder:
        read()
    seen: dict[str, Op] = {}
    for op in recorder.ops:
        if op.statement.startswith("dash_"):
            seen.setdefault(op.statement, op)
    return list(seen.values())


def plan(dsn: str, app: Acta, op: Op) -> dict[str, Any]:
    """EXPLAIN (FORMAT JSON) of ``op`` as the provider would send it."""
    provider: Any = app.provider
    sql = provider.statements[op.statement].sql
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("EXPLAIN (FORMAT JSON) " + sql, dict(op.params)).fetchone()
    assert row is not None
    data = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    return dict(data[0]["Plan"])


def execution_ms(dsn: str, app: Acta, op: Op) -> float:
    """The server's own time for ``op`` (EXPLAIN ANALYZE's execution time), in ms."""
    provider: Any = app.provider
    sql = provider.statements[op.statement].sql
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, dict(op.params)
        ).fetchone()
    assert row is not None
    data = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    return float(data[0]["Execution Time"])


def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from nodes(child)


def seq_scans(tree: dict[str, Any], tables: tuple[str, ...] = BIG_TABLES) -> list[str]:
    """The big tables ``tree`` reads with a sequential scan."""
    return [
        n["Relation Name"]
        for n in nodes(tree)
        if n["Node Type"] == "Seq Scan" and n.get("Relation Name") in tables
    ]


def plan_summary(dsn: str, app: Acta, op: Op) -> str:
    tree = plan(dsn, app, op)
    scans = [
        f"{n['Node Type']} {n.get('Relation Name', '')}"
        + (f" using {n['Index Name']}" if "Index Name" in n else "")
        for n in nodes(tree)
        if "Scan" in n["Node Type"]
    ]
    return f"{op.statement}: cost {tree['Total Cost']:.0f}; " + "; ".join(scans)
