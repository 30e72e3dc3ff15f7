"""How one statement runs on MariaDB: binding, the driver calls, row shaping, and the clock.

Every op goes through ``acta.provider.statements.op_calls`` with ``one_statement`` below as the
dialect's runner, so a named statement may be a program of several calls (``programs.py``:
MariaDB has no ``UPDATE ... RETURNING``). ``perform`` does a ``Call`` on a PyMySQL cursor.

Instants: the ledger stores ``DATETIME(3)`` in UTC. A verb that leaves ``:now`` to the database
binds the transaction's instant, read once from the server clock (``UTC_TIMESTAMP(3)``) on the
verb's first statement that needs it: every event of one transaction then carries one instant,
as PostgreSQL's ``now()`` does, and no statement reads the clock of the machine acta runs on.

An insert whose block says ``-- on duplicate key: no row`` answers no row (a row count of 0)
when a unique key refuses it, which is what ``ON CONFLICT DO NOTHING`` does on the other
dialects; MariaDB's own ``INSERT IGNORE`` would also swallow truncation and foreign-key errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from acta.provider.statements import Call, Calls, Statement, Statements, op_calls
from acta.provider.verb import Fetch, Op

SKIP_DUPLICATES = "-- on duplicate key: no row"
ER_DUP_ENTRY = 1062
NOW = "SELECT UTC_TIMESTAMP(3) AS now"


class Clock:
    """The transaction's instant, read from the server the first time a statement needs it."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now: datetime | None = None


def _bind(value: object) -> object:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetimes cannot be bound; use timezone-aware UTC")
        utc = value.astimezone(UTC).replace(tzinfo=None)
        return utc.replace(microsecond=utc.microsecond // 1000 * 1000)  # DATETIME(3)
    return value


def bind_params(params: Mapping[str, Any], now: datetime | None) -> dict[str, object]:
    out = {k: _bind(v) for k, v in params.items()}
    if "now" in out and out["now"] is None:
        out["now"] = now
    return out


def _value(name: str, value: object) -> object:
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC)
    if isinstance(value, Decimal):
        # SUM() and arithmetic on integers come back as DECIMAL; acta's numbers are integers
        # unless a fraction is really there.
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, str) and (name == "at" or name.endswith("_at")):
        # A bound instant selected back (``:now AS at``) comes back as the text sent.
        try:
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        except ValueError:
            return value
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def shape_rows(description: Any, raw_rows: Any, fetch: str) -> Any:
    """Rows as dicts, instants as aware UTC datetimes; the first row or None for ``one``."""
    names = [d[0] for d in description] if description else []
    out = [{n: _value(n, v) for n, v in zip(names, raw, strict=True)} for raw in raw_rows or ()]
    if fetch == "one":
        return out[0] if out else None
    return out


def one_statement(clock: Clock) -> Any:
    """The runner of one statement for ``op_calls``, binding the transaction's instant."""

    def one(statement: Statement, fetch: Fetch, params: Any) -> Calls:
        if clock.now is None and _needs_now(params, fetch):
            _, rows = yield Call("rows", NOW, None)
            clock.now = rows[0][0]
        if fetch == "many":
            yield Call("many", statement.sql, [bind_params(p, clock.now) for p in params])
            return None
        bound = bind_params(params, clock.now)
        skip = SKIP_DUPLICATES in statement.sql
        if fetch == "rowcount":
            count = yield Call("rowcount", statement.sql, bound if not skip else (bound, skip))
            return max(count, 0)
        description, rows = yield Call("rows", statement.sql, bound if not skip else (bound, skip))
        return shape_rows(description, rows, fetch)

    return one


def _needs_now(params: Any, fetch: Fetch) -> bool:
    if fetch == "many":
        return any(p.get("now", 0) is None for p in params)
    return "now" in params and params["now"] is None


def calls(statements: Statements, op: Op, clock: Clock) -> Calls:
    """The driver calls that run ``op`` (a plain statement or a program)."""
    return op_calls(statements, op, one_statement(clock))


def perform(cur: Any, call: Call) -> Any:
    """Do ``call`` on a PyMySQL cursor. ``(params, True)`` marks an insert whose duplicate-key
    refusal answers no row (see the module docstring)."""
    params = call.params
    skip = isinstance(params, tuple) and len(params) == 2 and params[1] is True
    if skip:
        params = params[0]
    if call.kind == "many":
        cur.executemany(call.sql, params)
        return None
    try:
        cur.execute(call.sql, params)
    except Exception as exc:
        if skip and getattr(exc, "args", (None,))[0] == ER_DUP_ENTRY:
            return 0 if call.kind == "rowcount" else (None, [])
        raise
    if call.kind == "rowcount":
        return cur.rowcount
    return cur.description, cur.fetchall()
