"""The SQLite test ledgers share one parsed set of statements between providers (a third of a
test's ledger cost) and nothing else; a provider that grows state is built the ordinary way."""

from __future__ import annotations

from pathlib import Path

from acta.provider.sqlite.provider import SqliteProvider
from acta.provider.sqlite.testing import SqliteLedgers, _provider_like


def test_ledgers_share_statements_and_nothing_else(tmp_path: Path) -> None:
    ledgers = SqliteLedgers(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with ledgers.ledger(tmp_path / "a") as first, ledgers.ledger(tmp_path / "b") as second:
        assert isinstance(first, SqliteProvider) and isinstance(second, SqliteProvider)
        assert first.statements is second.statements
        assert (first.path, second.path) == (
            tmp_path / "a" / "ledger.sqlite3",
            tmp_path / "b" / "ledger.sqlite3",
        )
        first.migrate()  # connects the first only
        assert first._conn is not None and second._conn is None
        assert first._lock is not second._lock
        assert first.check_schema() is None and second.check_schema() is None


def test_a_provider_with_other_state_is_built_afresh(tmp_path: Path) -> None:
    prototype = SqliteProvider(tmp_path / "p.sqlite3")
    prototype.extra = {}  # type: ignore[attr-defined]
    made = _provider_like(prototype, tmp_path / "q.sqlite3")
    assert made.statements is not prototype.statements
    assert not hasattr(made, "extra")
