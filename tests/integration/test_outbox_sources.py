"""The outbox relay against a PostgreSQL source, and the quarantine CLI.

The ledger is a SQLite file (the integration conftest's ``acta_provider``); the source is a
PostgreSQL schema of the test's own, reached by URL or by a ``connect`` callable, so the two
sides of a delivery are different databases, as in production. The CLI tests use a SQLite
source and drive ``acta outbox quarantine`` through ``main``.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, EventCode
from acta.cli.main import main
from acta.outbox import OutboxSource, create_outbox
from acta_testing import Host

if TYPE_CHECKING:
    from conftest import Ledger

    from acta_testing.schemas import PostgresSchemas

ran: list[str] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


@pytest.fixture
def pg_shop(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A PostgreSQL schema holding the outbox: the DSN and the schema name."""
    psycopg = pytest.importorskip("psycopg")
    schemas: PostgresSchemas = request.getfixturevalue("_acta_postgres_schemas")
    name = f"shop_{secrets.token_hex(4)}"
    with psycopg.connect(schemas.dsn, autocommit=True) as admin:
        create_outbox(admin, schema=name)
        try:
            yield schemas.dsn, name
        finally:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


def _declare(app: Acta) -> None:
    @app.job("post")
    def post(entry: str) -> None:
        ran.append(entry)


@pytest.mark.parametrize("by", ["url", "connect"])
def test_postgres_source_delivers_in_lane_order_and_quarantines(
    acta_provider: Any, acta_clock: Any, pg_shop: tuple[str, str], ledger: Ledger, by: str
) -> None:
    import psycopg

    dsn, schema = pg_shop
    if by == "url":
        source = OutboxSource(url=dsn, schema=schema, batch=3)
    else:
        source = OutboxSource(connect=lambda: psycopg.connect(dsn), schema=schema, batch=3)
    app = Acta(outbox=source)
    _declare(app)
    with psycopg.connect(dsn) as conn:
        for n in range(5):
            app.add_to_outbox("post", f"a{n}", connection=conn, outbox_schema=schema, lane="a")
        conn.execute(
            f"INSERT INTO {schema}.acta_outbox (namespace, job_name, input_codec, input, "
            "priority, staged_at, lane) VALUES ('default', 'ghost', 1, '1', 0, now(), 'a')"
        )
        app.add_to_outbox("post", "a-last", connection=conn, outbox_schema=schema, lane="a")
    host = Host(app, acta_provider, acta_clock)
    try:
        while True:
            host.run_until_idle()
            with psycopg.connect(dsn) as conn:
                left = conn.execute(f"SELECT count(*) FROM {schema}.acta_outbox").fetchone()
            if left == (0,):
                break
            host.advance("1s")
        host.run_until_idle()
        assert ran == ["a0", "a1", "a2", "a3", "a4", "a-last"]
        desk = app.outbox_quarantine()
        [entry] = desk.entries()
        assert (entry.job_name, entry.reason) == ("ghost", "unknown_job")

        @app.job("ghost")
        def ghost(n: int) -> None:
            ran.append(f"ghost {n}")

        desk.requeue(entry.row, actor="ops")  # back under its identity id (OVERRIDING)
        host.advance("1s")
        host.run_until_idle()
        assert ran[-1] == "ghost 1"
        keys = ledger.rows("SELECT dedup_key FROM acta_jobs WHERE dedup_key LIKE 'outbox:%'")
        assert len(keys) == 7 and (f"outbox:default:{entry.row}",) in keys
        slot = ledger.value("SELECT job_ref FROM acta_jobs WHERE dedup_key = 'sys.outbox'")
        codes = [e.code for e in app.events(slot)]
        assert EventCode.QUARANTINED in codes and EventCode.QUARANTINE_DECIDED in codes
    finally:
        host.close()


# Rows some other program wrote into a PostgreSQL outbox: the column types hold, the values
# need not (timestamps Python cannot hold, priorities or keys enqueue refuses).
PG_BAD_ROWS: list[tuple[str, dict[str, Any]]] = [
    ("rejected", {"priority": 999}),
    ("rejected", {"priority": -5000}),
    ("undecodable", {"run_at": "infinity"}),
    ("undecodable", {"deadline_at": "-infinity"}),
    ("undecodable", {"staged_at": "20000-01-01 00:00:00+00"}),
    ("rejected", {"lane": ""}),
    ("rejected", {"tags": '["", 1]'}),
    ("unknown_job", {"job_name": "ghost"}),
]


def _stage_raw(conn: Any, schema: str, **values: Any) -> int:
    row = {
        "namespace": "default",
        "job_name": "post",
        "input_codec": 2,
        "input": b"x",
        "priority": 0,
        "staged_at": "now",
        "lane": "a",
        **values,
    }
    columns, marks = ", ".join(row), ", ".join(f"%({name})s" for name in row)
    sql = f"INSERT INTO {schema}.acta_outbox ({columns}) VALUES ({marks}) RETURNING id"
    return int(conn.execute(sql, row).fetchone()[0])


def test_postgres_source_quarantines_bad_rows_alone(
    acta_provider: Any, acta_clock: Any, pg_shop: tuple[str, str]
) -> None:
    import psycopg

    dsn, schema = pg_shop
    app = Acta(outbox=OutboxSource(url=dsn, schema=schema))
    _declare(app)
    bad: dict[int, str] = {}
    with psycopg.connect(dsn) as conn:
        for n, (reason, values) in enumerate(PG_BAD_ROWS):
            app.add_to_outbox("post", f"a{n}", connection=conn, outbox_schema=schema, lane="a")
            bad[_stage_raw(conn, schema, **values)] = reason
        app.add_to_outbox("post", "a-last", connection=conn, outbox_schema=schema, lane="a")
    host = Host(app, acta_provider, acta_clock)
    try:
        host.run_until_idle()
        # Every good row went through, in lane order, past the bad ones between them.
        assert ran == [f"a{n}" for n in range(len(PG_BAD_ROWS))] + ["a-last"]
        desk = app.outbox_quarantine()
        entries = desk.entries()  # readable, infinite timestamps and all
        assert {e.row: e.reason for e in entries} == bad
        with psycopg.connect(dsn) as conn:
            left = conn.execute(f"SELECT count(*) FROM {schema}.acta_outbox").fetchone()
        assert left == (0,)
        messages = [e.message for e in entries]
        assert messages[0].startswith("InvalidPolicyError: priority: got 999")
        assert messages[2].startswith("run_at: 'infinity' is not a timestamp")
        assert [job.priority for job in app.jobs(name="post")] == [0] * (len(PG_BAD_ROWS) + 1)
    finally:
        host.close()


# -- the CLI -------------------------------------------------------------------------------


@pytest.fixture
def cli_shop(tmp_path: Path) -> Path:
    """A SQLite source with one quarantined row (id 1) and a ledger file next to it."""
    path = tmp_path / "shop.sqlite3"
    with closing(sqlite3.connect(path)) as conn:
        create_outbox(conn)
        conn.execute(
            "INSERT INTO acta_outbox_quarantine (outbox_id, namespace, job_name, input_codec, "
            "input, priority, tags, deadline_strict, staged_at, attempts, reason, message, "
            "quarantined_at, quarantined_by) VALUES (1, 'default', 'ghost', 1, X'37', 0, '[]', 1, "
            "'2026-01-01 00:00:00.000', 0, 'unknown_job', 'no job named ''ghost''', "
            "'2026-01-01 00:00:01.000', 'w-1')"
        )
        conn.commit()
    assert main(["schema", "apply", "--database", str(tmp_path / "jobs.sqlite3")]) == 0
    return path


def test_cli_lists_and_shows_entries(cli_shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["outbox", "quarantine", "list", "--source", str(cli_shop)]) == 0
    out = capsys.readouterr().out
    assert "ghost" in out and "unknown_job" in out
    assert main(["outbox", "quarantine", "show", "1", "--source", str(cli_shop), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["row"], shown["reason"], shown["input"], shown["decision"]) == (
        1,
        "unknown_job",
        7,
        None,
    )


def test_cli_requeue_then_discard_is_refused(
    cli_shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = str(cli_shop.parent / "jobs.sqlite3")
    args = ["--source", str(cli_shop), "--database", ledger]
    decide = ["outbox", "quarantine", "requeue", "1", "--actor", "ana", "--reason", "fixed"]
    assert main([*decide, *args]) == 0
    assert "back in the outbox" in capsys.readouterr().out
    with closing(sqlite3.connect(cli_shop)) as conn:
        assert conn.execute("SELECT id, job_name FROM acta_outbox").fetchall() == [(1, "ghost")]
        decided = conn.execute(
            "SELECT decision, actor, decision_reason FROM acta_outbox_quarantine"
        ).fetchall()
    assert decided == [("requeue", "ana", "fixed")]
    with closing(sqlite3.connect(ledger)) as conn:
        [(code, message)] = conn.execute("SELECT code, message FROM acta_events").fetchall()
    assert code == int(EventCode.QUARANTINE_DECIDED) and "requeue by ana" in message

    assert main(["outbox", "quarantine", "discard", "1", *args]) == 1
    assert "already decided" in capsys.readouterr().err


def test_cli_refuses_unknown_rows_and_missing_sources(
    cli_shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["outbox", "quarantine", "show", "99", "--source", str(cli_shop)]) == 1
    assert "not in quarantine" in capsys.readouterr().err
    missing = str(cli_shop.parent / "nope.sqlite3")
    assert main(["outbox", "quarantine", "list", "--source", missing]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["outbox", "quarantine", "list"]) == 2
    assert "--source" in capsys.readouterr().err


def test_cli_lists_entries_whatever_their_columns_hold(
    cli_shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Another program wrote a blob job name, a text input and a staged_at that is no timestamp.
    with closing(sqlite3.connect(cli_shop)) as conn:
        conn.execute(
            "INSERT INTO acta_outbox_quarantine (outbox_id, namespace, job_name, input_codec, "
            "input, priority, tags, deadline_strict, staged_at, attempts, reason, message, "
            "quarantined_at, quarantined_by) VALUES (2, 'default', X'6A6F62', 1, '7', 'high', "
            "'[]', 1, 'yesterday', 0, 'undecodable', 'staged_at: ...', "
            "'2026-01-01 00:00:02.000', 'w-1')"
        )
        conn.commit()
    capsys.readouterr()
    assert main(["outbox", "quarantine", "list", "--source", str(cli_shop), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(e["row"], e["job"], e["staged_at"]) for e in listed] == [
        (1, "ghost", "2026-01-01T00:00:00.000Z"),
        (2, "b'job'", None),
    ]
    assert main(["outbox", "quarantine", "show", "2", "--source", str(cli_shop), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input"] == 7
