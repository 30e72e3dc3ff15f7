"""docs/reference/views.md matches the views a migrated SQLite ledger really has, and every SQL
example on the page runs, names real codes, and (unless it depends on the wall clock or on a
ref the reader fills in) finds rows in a ledger with one job in each interesting state."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing

import pytest
from docs_support import REFERENCE, Table, column_tables, fenced_blocks, name_of, populate

from acta.model.codes import (
    AlertKind,
    AlertSeverity,
    EventCode,
    GateKind,
    JobStatus,
    Outcome,
    Reason,
    StepState,
    WaitKind,
    WorkerStatus,
)

PAGE = REFERENCE / "views.md"
VIEWS = (
    "jobs_view",
    "workers_view",
    "events_view",
    "lanes_view",
    "gates_view",
    "locks_view",
    "meters_view",
    "steps_view",
    "waits_view",
    "alerts_view",
    "schedules_view",
    "settings_view",
    "effective_policy_view",
    "tenants_view",
    "namespaces_view",
)
INSTANT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")
# Declared types SQLite reports for a view column (empty for computed expressions), and the
# storage class every non-NULL value must have, for each type the page may name.
TYPES = {
    "text": ({"TEXT", ""}, "text"),
    "integer": ({"INTEGER", ""}, "integer"),
    "real": ({"REAL", ""}, "real"),
    "boolean": ({"INTEGER", ""}, "integer"),  # 0 or 1 on SQLite; a real boolean on PostgreSQL
    "instant": ({"TEXT", ""}, "text"),
}
# Columns no release writes yet, so the sample ledger cannot show a value.
NEVER_FILLED: set[tuple[str, str]] = {("alerts_view", "resolved_at")}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    path = tmp_path_factory.mktemp("views") / "ledger.sqlite3"
    populate(path)
    with closing(sqlite3.connect(path)) as conn:
        yield conn


def _documented() -> dict[str, Table]:
    return column_tables(PAGE)


def test_page_documents_exactly_the_views() -> None:
    assert sorted(_documented()) == sorted(VIEWS)


def test_every_view_of_the_ledger_is_listed(ledger: sqlite3.Connection) -> None:
    rows = ledger.execute("SELECT name FROM sqlite_master WHERE type = 'view'")
    assert sorted(row[0].removeprefix("acta_") for row in rows) == sorted(VIEWS)


def test_page_names_each_view_for_both_providers() -> None:
    text = PAGE.read_text("utf-8")
    for view in VIEWS:
        assert f"## `{view}`" in text
    assert "`acta_jobs_view`" in text and "`acta.jobs_view`" in text


@pytest.mark.parametrize("view", VIEWS)
def test_columns_are_the_view_columns_in_order(view: str, ledger: sqlite3.Connection) -> None:
    table = _documented()[view]
    assert table.header == ("column", "type", "meaning")
    documented = [name_of(row[0]) for row in table.rows]
    actual = [row[1] for row in ledger.execute(f"PRAGMA table_info(acta_{view})")]
    assert documented == actual


@pytest.mark.parametrize("view", VIEWS)
def test_types_match_declared_types_and_stored_values(
    view: str, ledger: sqlite3.Connection
) -> None:
    declared = {row[1]: row[2] for row in ledger.execute(f"PRAGMA table_info(acta_{view})")}
    problems = []
    for row in _documented()[view].rows:
        column, kind, meaning = name_of(row[0]), row[1], row[2]
        if kind not in TYPES:
            problems.append(f"{column}: unknown type {kind!r} (use one of {sorted(TYPES)})")
            continue
        allowed, storage = TYPES[kind]
        if column not in declared:
            problems.append(f"{column}: no such column in acta_{view}")
            continue
        if declared[column] not in allowed:
            problems.append(f"{column}: documented {kind}, declared {declared[column]!r}")
        values = ledger.execute(f"SELECT typeof({column}), {column} FROM acta_{view}").fetchall()
        seen = [(t, v) for t, v in values if t != "null"]
        if not seen and (view, column) not in NEVER_FILLED:
            problems.append(f"{column}: the sample ledger never fills it; extend populate()")
        if kind == "boolean" and not {v for _, v in seen} <= {0, 1}:
            problems.append(f"{column}: documented boolean, found values other than 0 and 1")
        for stored, value in seen:
            if stored != storage or (kind == "instant" and not INSTANT.fullmatch(value)):
                problems.append(f"{column}: documented {kind}, found {stored} {value!r}")
                break
        if len(seen) < len(values) and "NULL" not in meaning:
            problems.append(f"{column}: can be NULL but the meaning does not say when")
    assert problems == []


# -- the SQL examples -------------------------------------------------------------------------

EXAMPLES = fenced_blocks(PAGE, "sql")
FAMILY_LABELS = {
    "status": {m.label for m in JobStatus} | {m.label for m in WorkerStatus},
    "worker_status": {m.label for m in WorkerStatus},
    "event": {m.label for m in EventCode},
    "outcome": {m.label for m in Outcome},
    "reason": {m.label for m in Reason},
    "last_error_reason": {m.label for m in Reason},
    "head_status": {m.label for m in JobStatus},
    "kind": {m.label for m in GateKind}
    | {m.label for m in WaitKind}
    | {m.label for m in AlertKind},
    "state": {m.label for m in StepState},
    "severity": {m.label for m in AlertSeverity},
    "deadline_policy": {"strict", "advisory"},
}
_COMPARE = re.compile(r"\b(\w+)\s*(?:=|<>|!=)\s*'([^']*)'")
_IN_LIST = re.compile(r"\b(\w+)\s+(?:NOT\s+)?IN\s*\(([^)]*)\)", re.IGNORECASE)


def _coded_literals(sql: str) -> Iterator[tuple[str, str]]:
    for column, literal in _COMPARE.findall(sql):
        yield column, literal
    for column, items in _IN_LIST.findall(sql):
        for literal in re.findall(r"'([^']*)'", items):
            yield column, literal


def test_page_has_examples_for_the_common_questions() -> None:
    assert len(EXAMPLES) >= 8
    used = " ".join(body for _, _, body in EXAMPLES)
    for view in VIEWS:
        assert f"acta_{view}" in used


@pytest.mark.parametrize(
    ("line", "sql"), [(n, b) for n, _, b in EXAMPLES], ids=[f"views.md:{n}" for n, _, _ in EXAMPLES]
)
def test_example_runs_on_sqlite(line: int, sql: str, ledger: sqlite3.Connection) -> None:
    assert sqlite3.complete_statement(sql), f"views.md:{line}: not one complete statement"
    rows = ledger.execute(sql).fetchall()
    wrong = [
        f"{column} = {literal!r}"
        for column, literal in _coded_literals(sql)
        if column in FAMILY_LABELS and literal not in FAMILY_LABELS[column]
    ]
    assert wrong == [], f"views.md:{line}: not a code name"
    depends_on_reader = "'now'" in sql or "'job_" in sql
    assert rows or depends_on_reader, f"views.md:{line}: returned nothing on the sample ledger"


def test_literal_check_catches_a_misspelt_status() -> None:
    found = dict(_coded_literals("SELECT 1 FROM v WHERE j.status IN ('ready', 'runing')"))
    assert found == {"status": "runing"}
    assert "runing" not in FAMILY_LABELS["status"]


def test_sample_ledger_has_a_job_in_each_interesting_state(ledger: sqlite3.Connection) -> None:
    statuses = {row[0] for row in ledger.execute("SELECT status FROM acta_jobs_view")}
    assert {"succeeded", "failed", "cancelled", "executing", "ready", "suspended"} <= statuses
    workers = {row[0] for row in ledger.execute("SELECT status FROM acta_workers_view")}
    assert workers == {"active", "dead"}
