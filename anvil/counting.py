"""Statement and transaction counters for the write budget (``anvil.budget``).

``install()`` wraps the two places every acta statement passes through on PostgreSQL (the sync
and async ``Link`` of ``acta.provider.postgres.link``): each statement is counted under its
name in the .sql files, each explicit transaction and each commit once. A statement run on
an autocommit connection (an ``alone`` statement) is its own transaction; those are counted
as ``autocommit``. Only the bench process that calls ``install()`` is affected: acta itself
is not changed, and nothing here runs in production.
"""

from __future__ import annotations

import collections
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

COUNTS: collections.Counter[str] = collections.Counter()
MARK = "acta-bench-counts"


def install() -> None:
    """Wrap the links once per process (a second call changes nothing)."""
    from acta.provider.postgres import link

    for cls in (link.SyncLink, link.AsyncLink):
        if not getattr(cls, "_acta_bench_counted", False):
            _wrap(cls)
            cls._acta_bench_counted = True  # type: ignore[attr-defined]


def _wrap(cls: Any) -> None:
    execute, raw, commit, transaction = cls.execute, cls.raw, cls.commit, cls.transaction

    async def counted_execute(self: Any, op: Any, sql: str) -> Any:
        COUNTS["statements"] += 1
        COUNTS[f"statement:{op.statement}"] += 1
        if self.conn.autocommit:
            COUNTS["autocommit"] += 1
        return await execute(self, op, sql)

    async def counted_raw(self: Any, sql: str) -> None:
        COUNTS["raw"] += 1
        await raw(self, sql)

    async def counted_commit(self: Any) -> None:
        COUNTS["commits"] += 1
        await commit(self)

    @contextlib.asynccontextmanager
    async def counted_transaction(self: Any) -> AsyncIterator[None]:
        COUNTS["transactions"] += 1
        async with transaction(self):
            yield

    cls.execute, cls.raw, cls.commit = counted_execute, counted_raw, counted_commit
    cls.transaction = counted_transaction


def reset() -> None:
    COUNTS.clear()


def snapshot() -> dict[str, int]:
    return dict(COUNTS)


def report_line() -> str:
    return f"{MARK} {json.dumps(snapshot(), sort_keys=True)}"
