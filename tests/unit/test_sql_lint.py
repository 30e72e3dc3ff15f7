"""Lint over the shipped SQL: what the dialects must agree on, and codes written as numbers.

Two mistakes the conformance suite can miss on the dialect it is not run against:

- a statement that takes a different set of ``:name`` parameters in one dialect than in another
  (the verb passes one dictionary to every dialect, so a renamed or extra parameter is a bug
  that shows only when that dialect runs that path);
- a status written as a number in a query that is not a status at all (a typo such as
  ``status = 12`` silently matches no row).

The parsing is deliberately plain: regular expressions over the statement text, comments
removed. What it recognises is listed on ``status_literals``; anything else is not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from acta.model.codes import JobStatus, WorkerStatus
from acta.provider import registry
from acta.provider.statements import Statement, Statements

# Statements allowed to take different parameters in different dialects, with the reason.
# Empty today: every shared statement takes the same parameters everywhere.
PARAMETER_DIFFERENCES: dict[str, str] = {}

# The tables with a status column, and the code family each one stores. The two families do
# not share a value (workers 1-3, jobs 10 and up), so a literal tied to the wrong table by
# the rules below fails the test rather than passing by luck.
STATUS_FAMILIES: dict[str, frozenset[int]] = {
    "runtime": frozenset(int(s) for s in JobStatus),
    "workers": frozenset(int(s) for s in WorkerStatus),
}

_COMMENT = re.compile(r"--[^\n]*")
_TABLE = re.compile(r"\{schema\}\.(\w+)(?:\s+(?:AS\s+)?(\w+))?", re.IGNORECASE)
_TARGET = (
    re.compile(r"\bUPDATE\s+\{schema\}\.(\w+)", re.IGNORECASE),
    re.compile(r"\bINSERT\s+INTO\s+\{schema\}\.(\w+)", re.IGNORECASE),
    re.compile(r"\bFROM\s+\{schema\}\.(\w+)", re.IGNORECASE),
)
_OP = r"(?:=|<>|!=|<=|>=|<|>)"
_COLUMN = r"(?:(\w+)\.)?\bstatus\b"
_COMPARED = re.compile(rf"{_COLUMN}\s*{_OP}\s*(\d+)\b", re.IGNORECASE)
_COMPARED_BACKWARDS = re.compile(rf"\b(\d+)\s*{_OP}\s*{_COLUMN}", re.IGNORECASE)
_IN_LIST = re.compile(rf"{_COLUMN}\s+(?:NOT\s+)?IN\s*\(\s*(\d+(?:\s*,\s*\d+)*)\s*\)", re.IGNORECASE)
_CASE = re.compile(rf"{_COLUMN}\s*=\s*CASE\b(.*?)\bEND\b", re.IGNORECASE | re.DOTALL)
_CASE_RESULT = re.compile(r"\b(?:THEN|ELSE)\s+(\d+)\b", re.IGNORECASE)
_INSERT = re.compile(
    r"\bINSERT\s+INTO\s+\{schema\}\.(\w+)\s*\(([^)]*)\)\s*(VALUES\s*\(|SELECT\b)", re.IGNORECASE
)


def _dialects() -> dict[str, Statements]:
    # Identity qualifier and named style: the text as written in the .sql file.
    return {e.name: Statements(e.package, lambda text: text, "named") for e in registry.entries()}


def _statements() -> Iterator[tuple[str, Statement]]:
    for dialect, statements in _dialects().items():
        for name in sorted(statements.names()):
            yield dialect, statements[name]


def _top_level_items(text: str) -> list[str]:
    """Comma-separated items at parenthesis depth 0, up to the parenthesis that closes the list."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                items.append(text[start:i])
                return [item.strip() for item in items]
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item.strip() for item in items]


def status_literals(sql: str) -> list[tuple[str | None, int, str]]:
    """Every number the statement compares with, or assigns to, a ``status`` column.

    Returns ``(table, number, where)``; ``table`` is None when the rules cannot tell which
    table's status it is. Recognised: ``status <op> N`` and ``N <op> status``, ``status IN
    (N, ...)``, ``status = CASE ... THEN N ELSE N END``, and a number in the status position of
    ``INSERT INTO t (..., status, ...) VALUES (...)`` or ``... SELECT ...``. A prefixed column
    (``w.status``) belongs to the table its alias names; a bare one (or the ``:status``
    parameter) to the table the statement updates, else inserts into, else first reads from.
    """
    text = _COMMENT.sub("", sql)
    aliases: dict[str, str] = {}
    for match in _TABLE.finditer(text):
        # A keyword after the table (``runtime SET``) becomes an alias too; harmless, since
        # no keyword is ever written before ``.status``.
        aliases[match.group(1)] = match.group(1)
        if match.group(2):
            aliases[match.group(2)] = match.group(1)
    bare = next((m.group(1) for p in _TARGET if (m := p.search(text))), None)

    def table(prefix: str | None) -> str | None:
        return bare if prefix is None else aliases.get(prefix)

    found: list[tuple[str | None, int, str]] = []
    for match in _COMPARED.finditer(text):
        found.append((table(match.group(1)), int(match.group(2)), match.group(0)))
    for match in _COMPARED_BACKWARDS.finditer(text):
        found.append((table(match.group(2)), int(match.group(1)), match.group(0)))
    for match in _IN_LIST.finditer(text):
        for number in match.group(2).split(","):
            found.append((table(match.group(1)), int(number), match.group(0)))
    for match in _CASE.finditer(text):
        for number in _CASE_RESULT.findall(match.group(2)):
            found.append((table(match.group(1)), int(number), " ".join(match.group(0).split())))
    for match in _INSERT.finditer(text):
        columns = [c.strip().lower() for c in match.group(2).split(",")]
        if "status" not in columns:
            continue
        values = _top_level_items(text[match.end() :])
        value = values[columns.index("status")] if len(values) > columns.index("status") else ""
        if value.isdigit():
            found.append((match.group(1), int(value), f"INSERT INTO {match.group(1)} ... {value}"))
    return found


def _bad_status_literals(sql: str) -> list[str]:
    problems = []
    for table, number, where in status_literals(sql):
        if table not in STATUS_FAMILIES:
            problems.append(f"{where!r}: cannot tell which table's status this is ({table})")
        elif number not in STATUS_FAMILIES[table]:
            allowed = ", ".join(str(n) for n in sorted(STATUS_FAMILIES[table]))
            problems.append(f"{where!r}: {number} is not a {table} status (one of {allowed})")
    return problems


# -- parameter parity ------------------------------------------------------------------------


def test_a_statement_takes_the_same_parameters_in_every_dialect() -> None:
    dialects = _dialects()
    names = set().union(*(s.names() for s in dialects.values()))
    shared = 0
    problems = []
    for name in sorted(names):
        have = {d: set(s[name].params) for d, s in dialects.items() if name in s.names()}
        if len(have) < 2:
            continue
        shared += 1
        every = set().union(*have.values())
        if name in PARAMETER_DIFFERENCES or all(p == every for p in have.values()):
            continue
        missing = {d: sorted(every - p) for d, p in have.items() if every - p}
        problems.append(f"{name}: parameters missing per dialect {missing}")
    assert shared >= 30, f"only {shared} statements are shared: is the loader finding them?"
    assert problems == [], "\n".join(problems)


def test_the_parameter_allow_list_names_real_statements() -> None:
    names = set().union(*(s.names() for s in _dialects().values()))
    assert sorted(set(PARAMETER_DIFFERENCES) - names) == []


# -- status literals -------------------------------------------------------------------------


def test_status_numbers_in_the_queries_are_status_codes() -> None:
    problems = []
    checked = 0
    for dialect, statement in _statements():
        checked += len(status_literals(statement.sql))
        for problem in _bad_status_literals(statement.sql):
            problems.append(f"{dialect} {statement.source} {statement.name}: {problem}")
    # Both dialects compare statuses as numbers in dozens of places; far fewer means the
    # patterns stopped matching the way the SQL is written.
    assert checked >= 60, f"only {checked} status literals found"
    assert problems == [], "\n".join(problems)


def test_the_scanner_reads_each_form_and_ties_it_to_its_table() -> None:
    sql = """
    -- status = 99 in a comment is not SQL
    WITH c AS (SELECT r.job_id FROM {schema}.runtime r
               WHERE r.status IN (20, 21)
                 AND EXISTS (SELECT 1 FROM {schema}.workers w WHERE w.status = 1))
    UPDATE {schema}.runtime
    SET status = CASE WHEN c.started THEN 21 ELSE 20 END,
        executions = executions + CASE WHEN status = 21 THEN 1 ELSE 0 END
    WHERE 100 > status AND :status >= 100
    """
    assert sorted(status_literals(sql)) == sorted(
        [
            ("runtime", 20, "r.status IN (20, 21)"),
            ("runtime", 21, "r.status IN (20, 21)"),
            ("workers", 1, "w.status = 1"),
            ("runtime", 21, "status = CASE WHEN c.started THEN 21 ELSE 20 END"),
            ("runtime", 20, "status = CASE WHEN c.started THEN 21 ELSE 20 END"),
            ("runtime", 21, "status = 21"),
            ("runtime", 100, "100 > status"),
            ("runtime", 100, "status >= 100"),
        ]
    )
    inserted = "INSERT INTO {schema}.workers (id, status, at) VALUES (:id, 1, COALESCE(:a, 2))"
    assert status_literals(inserted) == [("workers", 1, "INSERT INTO workers ... 1")]


def test_a_wrong_number_or_table_is_reported() -> None:
    assert _bad_status_literals("UPDATE {schema}.runtime SET status = 12") == [
        "'status = 12': 12 is not a runtime status (one of 10, 11, 20, 21, 30, 31, 100, 101, 102)"
    ]
    # A job status where a worker status belongs: the families share no value.
    assert _bad_status_literals("UPDATE {schema}.workers SET status = 10") == [
        "'status = 10': 10 is not a workers status (one of 1, 2, 3)"
    ]
    assert _bad_status_literals("SELECT 1 FROM {schema}.runtime r WHERE x.status = 10") == [
        "'x.status = 10': cannot tell which table's status this is (None)"
    ]
