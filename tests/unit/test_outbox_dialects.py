"""Each provider that can hold an outbox supplies the same things (acta.provider.outbox): the
relay's statements under the same names, a creation script, and a dialect object that knows
its own driver's connections and no other's."""

from __future__ import annotations

import sqlite3

import pytest

from acta.errors import ConfigurationError
from acta.outbox import provisioning_sql, table_name
from acta.provider import outbox, registry


def test_every_outbox_dialect_defines_the_same_relay_statements() -> None:
    names = {name: set(outbox.relay_statements(name)) for name in outbox.dialects()}
    first = next(iter(names.values()))
    assert first and all(found == first for found in names.values()), names


@pytest.mark.parametrize("name", outbox.dialects())
def test_each_dialect_says_what_the_outbox_needs(name: str) -> None:
    found = outbox.dialect(name)
    assert found.name == name
    assert found.begin.upper().startswith("BEGIN")
    assert isinstance(found.stage_returns_id, bool) and isinstance(found.schemas, bool)
    assert "acta_outbox" in provisioning_sql(name)
    assert found.driver(object()) is None
    sql, params = outbox.stage_sql(name, ("namespace", "job_name"))
    assert params == ("namespace", "job_name") and sql.startswith("INSERT INTO {table}")


def test_a_connection_names_its_dialect() -> None:
    with sqlite3.connect(":memory:") as conn:
        found, is_async = outbox.for_connection(conn)
    assert (found.name, is_async) == ("sqlite", False)
    with pytest.raises(ConfigurationError, match=r"cannot use a builtins\.object"):
        outbox.for_connection(object())


def test_schemas_are_taken_only_where_the_dialect_has_them() -> None:
    for name in outbox.dialects():
        found = outbox.dialect(name)
        if found.schemas:
            assert table_name(name, "billing") == "billing.acta_outbox"
        else:
            with pytest.raises(ConfigurationError, match="has no schemas"):
                table_name(name, "billing")
    with pytest.raises(ConfigurationError, match="unknown outbox dialect"):
        table_name("oracle")
    assert set(outbox.dialects()) <= set(registry.names())
