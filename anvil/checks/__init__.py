"""Invariant checks over a ledger's rows: SQL files kept in the repository, and their loader.

Each check is one query that returns the rows breaking its invariant; an empty answer means
the invariant holds. The queries read only the ledger's tables (events above all), never acta's
code paths, so a certification run, a chaos test or an operator can ask the database itself
whether a run kept its promises (docs: shared design, reliability section 2):

- ``lanes_overlap``: I5, no two members of one lane were ever executing at once;
- ``lanes_order``: I5, members were enqueued, promoted and started in lane order, each only
  after every earlier member ended;
- ``concurrency_limit``: I6, no start took a concurrency gate over the limit in force;
- ``rate_envelope``: I7, a meter's starts in any window of t seconds stay within
  burst + rate x t (parameters ``meter``, ``rate``, ``period_ms``, ``burst``, all optional).

Two more read a table the workload keeps beside the ledger, the witness table, where each run
of a step body leaves a row (``anvil.checks.witness``); they are listed apart, in
``WITNESSED``, so ``run_checks`` over a ledger without that table still works:

- ``durable_steps_once``: a completed durable step's body never ran again after the step was
  recorded, and ran exactly once in the execution that recorded it;
- ``durable_amo_once``: an at-most-once step's body ran at most once, ever, and only in the
  execution that recorded its intent.
- ``locks_exclusive``: no two runs were inside one ``ctx.lock`` section at once, unless the
  earlier one had lost its lease (the section's enter and exit leave witness rows).

Three judge recurring schedules (``SCHEDULES``), from the slots' fired events; the third also
reads the witness table, where each run of a scheduled handler leaves a row under its instant:

- ``schedule_fired_once``: no instant of a slot has two fired events;
- ``schedule_no_gap``: consecutive firings of an interval schedule are one interval apart, or
  the later one's missed count covers the instants between them, as its misfire policy says;
- ``schedule_witness_once``: a firing's handler ran once in the run that recorded it, and in
  other runs of the firing only where a lost lease or an unfinished run explains it.

Three judge durable waits (``WAITS``), each for one definition named by its parameters; the
first two also read the witness table:

- ``sleep_honoured``: no run got past a durable sleep before it was due (``sleep_job``,
  ``sleep_after_step``);
- ``signal_received_once``: a waiting job was signalled once and its effect saw the payload
  sent to it (``signal_job``, ``signal_name``, ``signal_step``);
- ``children_settled``: no child spawned twice, none missing, a parent succeeded only after
  all its children did, no latch left (``parent_job``, ``children``).

One judges an outbox relay (``OUTBOX``, PostgreSQL): ``outbox_delivered_once``, every staged
row delivered as exactly one job or quarantined, none from nowhere, the outbox empty; it reads
the source's schema too (parameters ``outbox_schema`` and ``source``).

Nine judge a certification run (``CERTIFY``, anvil/certify): they read the expected table
the run keeps beside the ledger (``{schema}.expected``: each job it enqueued and the status it
must end in) and the witness table, as well as acta's tables:

- ``certify_lost``, ``certify_outcome``, ``certify_unexpected``: I1/I2, every acknowledged
  enqueue has its row and ended as expected; no job nobody enqueued, none rolled back;
- ``certify_settled_twice``: no run closed twice, no job ended twice;
- ``certify_extra_runs``: every extra run is explained by a lost lease or a retry, and every
  witnessed handler run is a recorded one;
- ``certify_fenced_writes``: I4, no event under an older lease epoch after a newer one,
  and no worker event under an epoch whose lease recovery already took;
- ``certify_attempts``: attempts and executions agree with the events;
- ``certify_stuck``: I2, nothing leased or waiting after the drain;
- ``certify_history``: I3, each timeline is complete and in order.

A check lives in ``common/<name>.sql`` (portable SQL, one text for all) unless a dialect needs
its own text: then in that provider's folder, ``acta/provider/<dialect>/checks/<name>.sql``
(the folder the registry entry names, so a new provider brings its checks with it). Files
are written like acta's own: the token ``{schema}.`` stands for the ledger's qualifier and
``:name`` for a parameter, both resolved here with acta's statement helpers and the dialect's
registry entry. ``anvil.checks.plant`` writes synthetic ledger
rows, to show a check can fail (tests/integration/test_checks_sql.py).

    import psycopg
    from anvil.checks import run_check

    with psycopg.connect(dsn, autocommit=True) as conn:
        assert run_check(conn, "lanes_overlap", "postgres", schema="acta") == []
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Protocol

from acta.provider import registry
from acta.provider.statements import convert_params, replace_schema

FOLDER = Path(__file__).parent
CHECKS = ("lanes_overlap", "lanes_order", "concurrency_limit", "rate_envelope")
WITNESSED = ("durable_steps_once", "durable_amo_once", "locks_exclusive")
SCHEDULES = ("schedule_fired_once", "schedule_no_gap", "schedule_witness_once")
WAITS = ("sleep_honoured", "signal_received_once", "children_settled")
OUTBOX = ("outbox_delivered_once",)
CERTIFY = (
    "certify_lost",
    "certify_outcome",
    "certify_unexpected",
    "certify_settled_twice",
    "certify_extra_runs",
    "certify_fenced_writes",
    "certify_attempts",
    "certify_stuck",
    "certify_history",
)
Row = dict[str, Any]


class _Cursor(Protocol):
    @property
    def description(self) -> Sequence[Sequence[Any]] | None: ...

    def fetchall(self) -> Sequence[Sequence[Any]]: ...


class Connection(Protocol):
    """What a check needs of a connection: ``sqlite3.Connection`` and ``psycopg.Connection``
    both have it."""

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...


def _entry(dialect: str) -> registry.ProviderEntry:
    if dialect not in registry.names():
        raise ValueError(f"no checks for dialect {dialect!r}; they exist for {registry.names()}")
    return registry.entry(dialect)


def dialect_file(dialect: str, filename: str) -> Traversable:
    """``filename`` in the ``checks`` folder of ``dialect``'s provider package."""
    return resources.files(_entry(dialect).package).joinpath("checks", filename)


def check_path(name: str, dialect: str) -> Traversable:
    """The file that holds check ``name`` for ``dialect`` (the dialect's own, else common)."""
    if name not in CHECKS + WITNESSED + SCHEDULES + WAITS + OUTBOX + CERTIFY:
        known = ", ".join(CHECKS + WITNESSED + SCHEDULES + WAITS + OUTBOX + CERTIFY)
        raise ValueError(f"no check named {name!r}; the checks are {known}")
    own = dialect_file(dialect, f"{name}.sql")
    return own if own.is_file() else FOLDER / "common" / f"{name}.sql"


def check_sql(name: str, dialect: str) -> str:
    """The check as written in its file: comments, ``{schema}.`` tokens, ``:name`` params."""
    return check_path(name, dialect).read_text("utf-8")


def qualifier(dialect: str, schema: str) -> str:
    """What ``{schema}.`` stands for in the ledger ``schema`` of ``dialect`` (its registry
    entry's word: ``"acta".`` on PostgreSQL, the ``acta_`` table prefix on SQLite)."""
    return _entry(dialect).qualifier(schema)


def resolve(text: str, dialect: str, schema: str) -> tuple[str, tuple[str, ...]]:
    """``text`` (``{schema}.`` tokens, ``:name`` params) ready for the driver of ``dialect``,
    and the names of its parameters."""
    style = _entry(dialect).paramstyle
    return convert_params(replace_schema(text, qualifier(dialect, schema)), style)


def prepare(
    name: str, dialect: str, schema: str = "acta", outbox: str | None = None
) -> tuple[str, tuple[str, ...]]:
    """The check's SQL ready for the driver of ``dialect`` (its entry's paramstyle), and the
    names of the parameters it takes. A check that reads an outbox source (its ``{outbox}.``
    token) needs ``outbox``, the source's schema."""
    text = check_sql(name, dialect)
    if "{outbox}." in text:
        if not outbox:
            raise ValueError(
                f"check {name!r} reads an outbox source: give the parameter outbox_schema, "
                "the schema its acta_outbox table is in"
            )
        text = text.replace("{outbox}.", qualifier(dialect, outbox))
    return resolve(text, dialect, schema)


def run_check(
    connection: Connection,
    name: str,
    dialect: str,
    schema: str = "acta",
    params: Mapping[str, Any] | None = None,
) -> list[Row]:
    """Run check ``name`` on the ledger ``schema`` reached through ``connection``; the rows
    breaking the invariant, each as {column: value} (an empty list: it holds).

    ``params`` may hold more names than the check takes (one mapping can serve every check);
    a parameter the check takes and ``params`` lacks is NULL, its documented default;
    ``outbox_schema`` names the outbox source's schema for the checks that read one. On a
    psycopg connection the query runs in a transaction (or savepoint) of its own, so it
    leaves no transaction open behind it."""
    given = dict(params or {})
    sql, names = prepare(name, dialect, schema, given.get("outbox_schema"))
    bound = {key: given.get(key) for key in names}
    block = getattr(connection, "transaction", None)
    if block is None:
        return _rows(connection.execute(sql, bound))
    with block():
        return _rows(connection.execute(sql, bound or None))


def run_checks(
    connection: Connection,
    dialect: str,
    schema: str = "acta",
    params: Mapping[str, Any] | None = None,
    names: Sequence[str] = CHECKS,
) -> dict[str, list[Row]]:
    """Run several checks (all by default); {check name: violating rows}."""
    return {name: run_check(connection, name, dialect, schema, params) for name in names}


def describe(name: str, rows: Sequence[Row], limit: int = 10) -> str:
    """A readable account of a check's violations, for an assertion message or a report."""
    if not rows:
        return f"{name}: holds"
    lines = [f"{name}: {len(rows)} violation(s)"]
    for row in rows[:limit]:
        lines.append("  " + ", ".join(f"{key}={value}" for key, value in row.items()))
    if len(rows) > limit:
        lines.append(f"  ... and {len(rows) - limit} more")
    return "\n".join(lines)


def _rows(cursor: _Cursor) -> list[Row]:
    columns = [str(column[0]) for column in cursor.description or ()]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


__all__ = [
    "CERTIFY",
    "CHECKS",
    "DIALECTS",
    "OUTBOX",
    "SCHEDULES",
    "WAITS",
    "WITNESSED",
    "check_path",
    "check_sql",
    "describe",
    "prepare",
    "qualifier",
    "run_check",
    "run_checks",
]
