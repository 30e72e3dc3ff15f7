"""Loads the named SQL statements a dialect ships in its ``queries/*.sql`` files.

A file holds blocks that start with ``-- name: <statement>``; everything up to the next such
line is the statement, comments included, so what users read is what runs. The loader does two
things only: it replaces the schema token ``{schema}.`` with the dialect's qualifier and it
rewrites ``:param`` placeholders into the driver's paramstyle. It must not rewrite anything
else: SQL stays as written.

PostgreSQL statements also come numbered (``$1``, ``$2``: ``Statement.numbered``), which acta's
own connections run through psycopg's raw cursors: the driver then sends the text as it is,
where a ``%(name)s`` text is parsed in Python on every call once it is longer than psycopg's
cache takes (4 KiB, which the commented fused statements exceed: about 0.8 ms per call).

Statement programs: a dialect may implement a named statement as a short program of driver
calls instead of one statement (MariaDB has no ``UPDATE ... RETURNING``: it updates, then
selects). Its steps are blocks named ``-- name: <statement>.<step>`` and its ``programs.py``
maps ``<statement>`` to a generator that runs them (``Program``); the verbs, written once, see
one named statement either way. A provider runs every op through ``op_calls``, performing the
``Call`` values it yields on its connection (sync or awaited), so programs need nothing of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module, resources
from importlib.resources.abc import Traversable
from typing import Any, Literal, Protocol, TypeAlias

from acta.errors import SchemaError
from acta.provider.verb import Fetch, Op

# A statement name, or ``<statement>.<step>`` for one step of a statement program.
_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)?)\s*$", re.M)
_PARAM = re.compile(r"[a-z_][a-z0-9_]*")
# A placeholder cast to an array type, e.g. ``:job_ids::bigint[]``.
_ARRAY_CAST = re.compile(r"::[a-z][a-z0-9_ ]*\[\]")
SCHEMA_TOKEN = "{schema}."


@dataclass(frozen=True, slots=True)
class Statement:
    """One named statement, ready for the driver."""

    name: str
    sql: str
    params: tuple[str, ...]
    source: str
    numbered: str = ""
    """PostgreSQL: the text with ``$n`` placeholders, ``$n`` being ``params[n - 1]``."""

    def values(self, params: Mapping[str, Any]) -> list[Any]:
        """``params`` in the order of the ``$n`` placeholders of ``numbered``."""
        try:
            return [params[name] for name in self.params]
        except KeyError as exc:
            raise SchemaError(f"statement {self.name!r} needs parameter {exc.args[0]!r}") from None


def _scan(sql: str) -> Iterator[tuple[int, int, str]]:
    """Yield ``(start, end, name)`` for each ``:name`` placeholder outside quotes and comments.

    ``::`` casts (PostgreSQL) are not placeholders.
    """
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in ("'", '"'):
            j = sql.find(c, i + 1)
            while j != -1 and j + 1 < n and sql[j + 1] == c:  # doubled quote escapes itself
                j = sql.find(c, j + 2)
            i = n if j == -1 else j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j == -1 else j + 1
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j == -1 else j + 2
        elif c == ":" and i + 1 < n and sql[i + 1] == ":":
            i += 2
        elif c == ":" and (i == 0 or sql[i - 1] != ":"):
            m = _PARAM.match(sql, i + 1)
            if m:
                yield i, m.end(), m.group(0)
                i = m.end()
            else:
                i += 1
        else:
            i += 1


# Pure, and called with the same few hundred texts by every provider built in a process (a
# test suite builds one per test): parsing them again cost ~9 ms per SQLite provider.
@lru_cache(maxsize=4096)
def convert_params(sql: str, style: str) -> tuple[str, tuple[str, ...]]:
    """Rewrite ``:name`` placeholders for ``style`` ("named" keeps them, "pyformat" uses
    ``%(name)s`` and doubles literal percent signs). Returns the SQL and the names in order.

    In "pyformat", a placeholder cast to an array type (``:ids::bigint[]``) becomes
    ``%(name)b``: psycopg then sends that list in binary format, which costs the client and the
    server a fraction of the text form for the batch arrays of the fused statements.
    "numeric" writes ``$n`` (PostgreSQL's own form, for raw cursors), one number per name in
    order of first appearance, and leaves percent signs alone."""
    names: list[str] = []
    numbers: dict[str, int] = {}
    out: list[str] = []
    last = 0
    for start, end, name in _scan(sql):
        names.append(name)
        number = numbers.setdefault(name, len(numbers) + 1)
        chunk = sql[last:start]
        out.append(chunk.replace("%", "%%") if style == "pyformat" else chunk)
        if style == "pyformat":
            binary = _ARRAY_CAST.match(sql, end) is not None
            out.append(f"%({name})b" if binary else f"%({name})s")
        elif style == "numeric":
            out.append(f"${number}")
        else:
            out.append(f":{name}")
        last = end
    tail = sql[last:]
    out.append(tail.replace("%", "%%") if style == "pyformat" else tail)
    return "".join(out), tuple(dict.fromkeys(names))


def parse_blocks(text: str, source: str) -> dict[str, str]:
    """Split one .sql file into its named blocks."""
    matches = list(_NAME_LINE.finditer(text))
    if not matches and text.strip():
        raise SchemaError(f"{source}: no '-- name:' blocks found")
    blocks: dict[str, str] = {}
    for k, m in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        body = text[m.end() : end].strip()
        name = m.group(1)
        if name in blocks:
            raise SchemaError(f"{source}: statement {name!r} is defined twice")
        blocks[name] = body.rstrip(";").rstrip()
    return blocks


def sql_files(package: str, folder: str) -> list[Traversable]:
    """The .sql files of ``package/folder`` in name order."""
    root = resources.files(package).joinpath(folder)
    return sorted((f for f in root.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)


# -- statement programs -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """One call into the driver: ``many`` runs ``sql`` once per parameter set and answers
    nothing; ``rowcount`` answers the number of rows changed; ``rows`` answers ``(description,
    rows)`` with every row fetched. ``params`` are already bound for the driver."""

    kind: Literal["many", "rowcount", "rows"]
    sql: str
    params: Any


Calls: TypeAlias = Generator[Call, Any, Any]
"""Driver calls to perform in order, each receiving its answer; returns the op's result."""

OneStatement = Callable[[Statement, Fetch, Any], Calls]
"""A dialect's way to run one statement: its driver calls for ``(statement, fetch, params)``
(binding the parameters, shaping the rows as the verbs expect them)."""


class Steps:
    """What a program sees: its own steps, each run like a plain statement of the dialect."""

    __slots__ = ("_one", "_statement", "_statements")

    def __init__(self, statements: Statements, statement: str, one: OneStatement) -> None:
        self._statements = statements
        self._statement = statement
        self._one = one

    def run(self, step: str, params: Any, fetch: Fetch = "all") -> Calls:
        """Run the block ``<statement>.<step>``; use with ``yield from``. Answers what a plain
        statement answers for ``fetch`` (rows as dicts, the first row, a row count)."""
        found = self._statements.step(self._statement, step)
        return (yield from self._one(found, fetch, params))

    def call(self, kind: Literal["many", "rowcount", "rows"], sql: str, params: Any) -> Calls:
        """One raw driver call (its answer unshaped), for what no block needs to hold."""
        return (yield Call(kind, sql, params))


class Program(Protocol):
    """A named statement written as driver calls (see the module docstring)."""

    def __call__(self, steps: Steps, op: Op) -> Calls: ...


def op_calls(statements: Statements, op: Op, one: OneStatement) -> Calls:
    """The driver calls that run ``op``: its program's, or ``one``'s for its single statement.
    Every provider runs ops through here, so any statement may become a program."""
    program = statements.programs.get(op.statement)
    if program is None:
        return (yield from one(statements[op.statement], op.fetch, op.params))
    return (yield from program(Steps(statements, op.statement, one), op))


def load_programs(package: str) -> dict[str, Program]:
    """``PROGRAMS`` of ``<package>.programs``, or none when the dialect has no such module."""
    try:
        module = import_module(f"{package}.programs")
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.programs":
            raise
        return {}
    return dict(module.PROGRAMS)


class Statements:
    """Every named statement of one dialect, with the schema token already resolved, and its
    statement programs (``programs``: statement name -> Program, steps in ``step()``)."""

    def __init__(self, package: str, qualify: Callable[[str], str], style: str) -> None:
        self._by_name: dict[str, Statement] = {}
        self.programs = load_programs(package)
        for f in sql_files(package, "queries"):
            for name, body in parse_blocks(f.read_text("utf-8"), f.name).items():
                if name in self._by_name:
                    raise SchemaError(f"statement {name!r} is defined in two files")
                text = qualify(body)
                sql, params = convert_params(text, style)
                numbered = convert_params(text, "numeric")[0] if style == "pyformat" else ""
                self._by_name[name] = Statement(name, sql, params, f.name, numbered)
        for name in self.programs:
            if name in self._by_name:
                raise SchemaError(f"statement {name!r} is both a block and a program")
            if not any(key.startswith(f"{name}.") for key in self._by_name):
                raise SchemaError(f"program {name!r} has no '-- name: {name}.<step>' blocks")
        for key in self._by_name:
            owner = key.partition(".")[0]
            if "." in key and owner not in self.programs:
                raise SchemaError(f"step {key!r} belongs to no program in {package}.programs")

    def __getitem__(self, name: str) -> Statement:
        try:
            return self._by_name[name]
        except KeyError:
            if name in self.programs:
                return self._program_text(name)
            raise SchemaError(f"no SQL statement named {name!r} in this dialect") from None

    def _program_text(self, name: str) -> Statement:
        """A program seen as text, for readers and lints (its steps in order, their parameters
        together, but the ones named ``_...`` that the program makes itself from earlier steps);
        it is run through ``op_calls``, never as this text."""
        steps = [s for key, s in self._by_name.items() if key.partition(".")[0] == name]
        params = tuple(dict.fromkeys(p for s in steps for p in s.params if not p.startswith("_")))
        text = ";\n".join(s.sql for s in steps)
        return Statement(name, text, params, steps[0].source)

    def step(self, statement: str, step: str) -> Statement:
        """The block ``<statement>.<step>`` of a program."""
        return self[f"{statement}.{step}"]

    def names(self) -> frozenset[str]:
        """The statement names the verbs may use: plain blocks and programs (not steps)."""
        return frozenset(n for n in self._by_name if "." not in n) | frozenset(self.programs)


def replace_schema(sql: str, qualifier: str) -> str:
    """Replace each ``{schema}.`` token with ``qualifier`` (e.g. ``acta_`` or ``"acta".``)."""
    return sql.replace(SCHEMA_TOKEN, qualifier)
