"""Durable named settings (issue 12): global, namespace and job scopes, the narrowest wins;
every write is a compare-and-set on the version and writes a setting-changed event in its
transaction; a new name needs no migration; bad input changes nothing.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from acta import Acta, ConflictError, UnknownJobError, ValidationError
from acta.model.codes import SettingScope
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger


@pytest.fixture
def known(acta_app: Acta, acta_host: Host) -> Acta:
    """An app whose namespace and job 'report' the ledger knows (a worker registered them)."""

    @acta_app.job("report")
    async def report() -> None: ...

    acta_host.add_worker()
    acta_host.advance(0)
    return acta_app


def changes(ledger: Ledger) -> list[str]:
    rows = ledger.rows(
        "SELECT message FROM {schema}.events_view WHERE event = 'setting-changed' ORDER BY event_id"
    )
    return [r[0] for r in rows]


def test_the_narrowest_scope_wins(known: Acta, ledger: Ledger) -> None:
    s = known.settings
    assert s.get("export.batch", 100) == 100
    assert s.set("export.batch", 500, scope="global", expected_version=0) == 1
    assert s.get("export.batch") == 500
    assert s.set("export.batch", 250, expected_version=0, reason="smaller batches") == 1
    assert s.get("export.batch") == 250
    assert s.set("export.batch", {"size": 10}, job="report", expected_version=0) == 1
    assert s.get("export.batch", job="report") == {"size": 10}
    assert s.get("export.batch") == 250
    stored = s.read("export.batch", job="report", scope="definition")
    assert stored is not None
    assert (stored.scope, stored.job_name, stored.version) == (SettingScope.DEFINITION, "report", 1)
    view = ledger.rows(
        "SELECT scope, namespace, job_name, value, version FROM {schema}.settings_view "
        "ORDER BY scope"
    )
    assert [tuple(r) for r in view] == [
        ("definition", "default", "report", '{"size":10}', 1),
        ("global", None, None, "500", 1),
        ("namespace", "default", None, "250", 1),
    ]
    assert changes(ledger) == [
        "set export.batch (global) by operator: changed by an operator",
        "set export.batch (namespace default) by operator: smaller batches",
        "set export.batch (job report in namespace default) by operator: changed by an operator",
    ]


def test_writes_are_compare_and_set(known: Acta, ledger: Ledger) -> None:
    s = known.settings
    s.set("limits.max", 1, expected_version=0)
    assert s.set("limits.max", 2, expected_version=1, actor="ann", reason="raise") == 2
    with pytest.raises(ConflictError, match="version 2, not 1"):
        s.set("limits.max", 3, expected_version=1)
    with pytest.raises(ConflictError, match="version 2, not 0"):
        s.set("limits.max", 3, expected_version=0)
    assert s.get("limits.max") == 2
    s.delete("limits.max", expected_version=2, reason="no longer used")
    assert s.read("limits.max") is None
    with pytest.raises(ConflictError, match="does not exist"):
        s.delete("limits.max", expected_version=0)
    assert s.set("limits.max", 9, expected_version=0) == 1  # a deleted name starts again
    assert [c.split(":")[0] for c in changes(ledger)] == [
        "set limits.max (namespace default) by operator",
        "set limits.max (namespace default) by ann",
        "deleted limits.max (namespace default) by operator",
        "set limits.max (namespace default) by operator",
    ]


def test_two_writers_racing_one_version_one_wins(known: Acta) -> None:
    s = known.settings
    s.set("race", 0, expected_version=0)

    async def write(value: int) -> object:
        try:
            return await s.set_async("race", value, expected_version=1)
        except ConflictError as exc:
            return exc

    async def both() -> list[object]:
        return list(await asyncio.gather(write(1), write(2)))

    outcomes = asyncio.run(both())
    assert sorted(type(o).__name__ for o in outcomes) == ["ConflictError", "int"]
    winner = next(o for o in outcomes if isinstance(o, int))
    assert winner == 2 and s.get("race") in (1, 2)
    assert s.read("race") is not None and s.read("race").version == 2  # type: ignore[union-attr]


def test_bad_input_is_refused_and_changes_nothing(known: Acta, ledger: Ledger) -> None:
    s = known.settings
    with pytest.raises(ValidationError, match="name"):
        s.set("Bad Name", 1, expected_version=0)
    with pytest.raises(ValidationError, match="expected_version"):
        s.set("ok", 1)
    with pytest.raises(ValidationError, match="expected_version"):
        s.set("ok", 1, expected_version=-1)
    with pytest.raises(ValidationError, match="scope"):
        s.set("ok", 1, scope="planet", expected_version=0)
    with pytest.raises(ValidationError, match="job"):
        s.set("ok", 1, scope="definition", expected_version=0)
    with pytest.raises(ValidationError, match="value"):
        s.set("ok", float("nan"), expected_version=0)
    with pytest.raises(ValidationError, match="value"):
        s.set("ok", "x" * (70 * 1024), expected_version=0)
    with pytest.raises(ValidationError, match="reason"):
        s.set("ok", 1, expected_version=0, reason="\x1b[2J")
    with pytest.raises(ValidationError, match="colour"):
        s.set("ok", 1, expected_version=0, colour="red")
    with pytest.raises(UnknownJobError, match="no job 'ghost'"):
        s.set("ok", 1, job="ghost", expected_version=0)
    assert changes(ledger) == []
    assert ledger.value("SELECT count(*) FROM {schema}.settings") == 0
