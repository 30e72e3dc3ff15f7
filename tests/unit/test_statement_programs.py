"""Statement programs: a dialect's named statement written as several driver calls."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acta.errors import SchemaError
from acta.provider.statements import Call, Calls, Statement, Statements, op_calls
from acta.provider.verb import Fetch, drive, fetch_all, fetch_one

PROGRAMS = """
from acta.provider.statements import Steps
from acta.provider.verb import Op


def touch(steps: Steps, op: Op):
    changed = yield from steps.run("update", op.params, "rowcount")
    if not changed:
        return []
    return (yield from steps.run("select", op.params, op.fetch))


PROGRAMS = {"touch": touch}
"""

QUERIES = """
-- name: plain
SELECT :a AS a;

-- name: touch.update
UPDATE t SET n = n + 1 WHERE id = :id;

-- name: touch.select
SELECT id, n FROM t WHERE id = :id;
"""


@pytest.fixture
def dialect(tmp_path: Path) -> Iterator[str]:
    """A throwaway dialect package with one plain statement and one program."""
    name = f"acta_test_dialect_{tmp_path.name.replace('-', '_')}"
    package = tmp_path / name
    (package / "queries").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "programs.py").write_text(textwrap.dedent(PROGRAMS))
    (package / "queries" / "all.sql").write_text(QUERIES)
    sys.path.insert(0, str(tmp_path))
    try:
        yield name
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m.startswith(name)]:
            del sys.modules[module]


def _one(statement: Statement, fetch: Fetch, params: Any) -> Calls:
    """A stand-in dialect runner: one call per statement, answered by the test's driver."""
    if fetch == "rowcount":
        return (yield Call("rowcount", statement.sql, dict(params)))
    answer = yield Call("rows", statement.sql, dict(params))
    return answer if fetch == "all" else (answer[0] if answer else None)


def test_programs_are_statement_names_and_their_steps_are_not(dialect: str) -> None:
    statements = Statements(dialect, lambda text: text, "named")
    assert statements.names() == {"plain", "touch"}
    assert statements.step("touch", "select").sql.startswith("SELECT id, n")


def test_a_program_runs_its_steps_and_answers_like_one_statement(dialect: str) -> None:
    statements = Statements(dialect, lambda text: text, "named")
    performed: list[str] = []

    def driver(call: Call, changed: int) -> Any:
        performed.append(call.sql.split()[0])
        if call.kind == "rowcount":
            return changed
        return [{"id": call.params["id"], "n": 2}]

    op = fetch_one("touch", {"id": 7})
    assert drive(op_calls(statements, op, _one), lambda c: driver(c, 1)) == {"id": 7, "n": 2}
    assert performed == ["UPDATE", "SELECT"]
    performed.clear()
    assert (
        drive(op_calls(statements, fetch_all("touch", {"id": 7}), _one), lambda c: driver(c, 0))
        == []
    )
    assert performed == ["UPDATE"]  # nothing changed: the program skips its select


def test_a_step_without_its_program_is_refused(dialect: str, tmp_path: Path) -> None:
    (tmp_path / dialect / "programs.py").write_text("PROGRAMS = {}\n")
    with pytest.raises(SchemaError, match=r"'touch\.update' belongs to no program"):
        Statements(dialect, lambda text: text, "named")


def test_a_program_without_steps_is_refused(dialect: str, tmp_path: Path) -> None:
    (tmp_path / dialect / "queries" / "all.sql").write_text("-- name: plain\nSELECT 1;\n")
    with pytest.raises(SchemaError, match="program 'touch' has no"):
        Statements(dialect, lambda text: text, "named")


def test_a_name_that_is_both_a_block_and_a_program_is_refused(dialect: str, tmp_path: Path) -> None:
    queries = tmp_path / dialect / "queries" / "all.sql"
    queries.write_text(QUERIES + "\n-- name: touch\nSELECT 1;\n")
    with pytest.raises(SchemaError, match="both a block and a program"):
        Statements(dialect, lambda text: text, "named")


def test_a_program_reads_as_its_steps_for_lints(dialect: str) -> None:
    text = Statements(dialect, lambda text: text, "named")["touch"]
    assert text.params == ("id",)
    assert text.sql.startswith("UPDATE t") and "SELECT id, n" in text.sql
