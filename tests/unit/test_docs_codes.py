"""docs/reference/codes.md, the code enums and the ledger's codes table say the same thing."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from acta.model import codes_doc
from acta.model.codes import ALL_FAMILIES, FAMILIES, Coded
from acta.provider.sqlite import SqliteProvider

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "codes.md"
REGENERATE = "python -m acta.model.codes_doc > docs/reference/codes.md"


def _enum_rows() -> set[tuple[str, int, str, str]]:
    return {
        (FAMILIES[enum], int(member), member.label, member.description)
        for enum in ALL_FAMILIES
        for member in enum
    }


def test_committed_page_is_the_generated_page() -> None:
    assert PAGE.read_text("utf-8") == codes_doc.render(), f"regenerate it: {REGENERATE}"


def test_module_entry_point_prints_the_page() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acta.model.codes_doc"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert done.stdout == codes_doc.render()


def test_page_lists_every_member_of_every_family() -> None:
    text = codes_doc.render()
    for enum in ALL_FAMILIES:
        section = text.split(f"\n## {FAMILIES[enum]}\n", 1)[1].split("\n## ", 1)[0]
        for member in enum:
            assert f"| {int(member)} | `{member.label}` |" in section, (enum, member)


def test_every_member_has_a_meaning() -> None:
    bare = [f"{enum.__name__}.{m.name}" for enum in ALL_FAMILIES for m in enum if not m.description]
    assert bare == []


def test_migration_inserts_exactly_the_enum_rows(tmp_path: Path) -> None:
    provider = SqliteProvider(tmp_path / "ledger.sqlite3")
    provider.migrate()
    provider.close()
    with sqlite3.connect(tmp_path / "ledger.sqlite3") as conn:
        rows = set(conn.execute("SELECT family, code, name, description FROM acta_codes"))
    assert rows == _enum_rows()


@pytest.mark.parametrize("enum", ALL_FAMILIES, ids=lambda e: e.__name__)
def test_labels_are_unique_within_a_family(enum: type[Coded]) -> None:
    labels = [m.label for m in enum]
    assert len(labels) == len(set(labels))
