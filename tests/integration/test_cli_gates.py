"""``acta gates``: listing concurrency gates and rate meters, and overriding a limit or a rate
with an expected-version check, through real runs of ``main()`` on a SQLite ledger file.

The ledgers are filled by the test host (manual clock, so the meter's instants are known); the
CLI then opens the same file on its own, as an operator's terminal would. Rows are checked
with plain sqlite3 connections, never through the code under test.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import acta.cli
from acta import Acta, JobStatus
from acta.cli import main
from acta.provider.sqlite import SqliteProvider
from acta_testing import Host


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No ledger from the environment or the working directory can stand in for the one named.
    monkeypatch.delenv("ACTA_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)


def _query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


def _json(path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> Any:
    capsys.readouterr()
    assert main(["gates", "--json", "--database", str(path), *more]) == 0
    return json.loads(capsys.readouterr().out)


def _gate(path: Path, capsys: pytest.CaptureFixture[str], name: str) -> Any:
    [gate] = [g for g in _json(path, capsys)["gates"] if g["name"] == name]
    return gate


@dataclass
class Busy:
    path: Path
    holder: str
    waiting: str


@pytest.fixture
def busy(acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider) -> Busy:
    """Key 'acme' held by a job whose worker died mid-run; meter 'carrier-api' (1/s) with one
    start at 00:00:00 and one job (ORD-2) booked for 00:00:01, after it passed the definition's
    own gate 'ship-order'; and gate 'render-video', passed and released."""
    doomed = acta_host.add_worker()

    @acta_app.job("ship-order", concurrency_limit=2, rate_limit="1/s", rate_key="carrier-api")
    def ship_order(order: str) -> None:
        if order == "ORD-1":
            acta_host.kill(doomed)  # its lease, and so its slot, stay until recovery

    @acta_app.job("render-video", concurrency_limit=3)
    def render_video(video: int) -> None: ...

    holder = ship_order.enqueue("ORD-1", concurrency_key="acme")
    waiting = ship_order.enqueue("ORD-2")
    render_video.enqueue(1)
    assert acta_host.tick(doomed) == "killed"
    assert acta_host.tick() == "bounced"  # ORD-2: the meter's next turn is a second away
    assert acta_host.tick() == "completed"  # render-video passes its own gate
    return Busy(acta_provider.path, str(holder), str(waiting))


# -- listing ----------------------------------------------------------------------------------


def test_a_fresh_ledger_has_no_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.sqlite3"
    assert main(["schema", "apply", "--database", str(path)]) == 0
    capsys.readouterr()
    assert main(["gates", "--database", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "no concurrency gates in namespace 'default'",
        "",
        "no rate meters in namespace 'default'",
    ]


def test_list_shows_limits_holders_and_the_next_free_turn(
    busy: Busy, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gates", "list", "--database", str(busy.path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Concurrency gates in namespace 'default'"
    assert lines[1].split() == [
        *("KIND", "NAME", "LIMIT", "DECLARED", "OVERRIDE", "HELD", "VERSION", "HOLDERS"),
    ]
    assert [line.split() for line in lines[2:5]] == [
        ["job", "render-video", "3", "3", "-", "0", "0", "-"],
        ["job", "ship-order", "2", "2", "-", "0", "0", "-"],  # ORD-2 passed it, then bounced
        ["key", "acme", "2", "2", "-", "1", "0", busy.holder],
    ]
    assert lines[6] == "Rate meters in namespace 'default'"
    # One start at 00:00:00 and one turn booked for 00:00:01: the next arrival gets 00:00:02.
    assert lines[8].split() == [
        "carrier-api",
        "1/s",
        "1/s",
        "no",
        "2026-01-01",
        "00:00:02.000Z",
        "0",
    ]


def test_json_lists_everything(busy: Busy, capsys: pytest.CaptureFixture[str]) -> None:
    assert _json(busy.path, capsys) == {
        "namespace": "default",
        "gates": [
            {
                "kind": "job",
                "name": "render-video",
                "limit": 3,
                "declared_limit": 3,
                "override": None,
                "held": 0,
                "holders": [],
                "version": 0,
            },
            {
                "kind": "job",
                "name": "ship-order",
                "limit": 2,
                "declared_limit": 2,
                "override": None,
                "held": 0,
                "holders": [],
                "version": 0,
            },
            {
                "kind": "key",
                "name": "acme",
                "limit": 2,
                "declared_limit": 2,
                "override": None,
                "held": 1,
                "holders": [busy.holder],
                "version": 0,
            },
        ],
        "meters": [
            {
                "name": "carrier-api",
                "rate": "1/s",
                "declared_rate": "1/s",
                "overridden": False,
                "next_free_at": "2026-01-01T00:00:02.000Z",
                "version": 0,
            }
        ],
    }


def test_namespace_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.sqlite3"
    assert main(["schema", "apply", "--database", str(path)]) == 0
    args = ["--key", "acme", "4", "--expect-version", "0", "--namespace", "billing"]
    assert main(["gates", "limit", *args, "--database", str(path)]) == 0
    assert _json(path, capsys)["gates"] == []
    [gate] = _json(path, capsys, "--namespace", "billing")["gates"]
    assert (gate["name"], gate["limit"]) == ("acme", 4)


# -- overriding a concurrency limit -------------------------------------------------------------


def test_limit_set_and_clear(busy: Busy, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    args = ["gates", "limit", "--key", "acme", "5", "--expect-version", "0"]
    said = ["--actor", "ops:kim", "--reason", "big customer import"]
    assert main([*args, *said, "--database", str(busy.path)]) == 0
    assert capsys.readouterr().out == "concurrency limit of key 'acme' set to 5; version 1\n"
    acme = _gate(busy.path, capsys, "acme")
    assert (acme["limit"], acme["declared_limit"], acme["override"]) == (5, 2, 5)
    assert acme["version"] == 1
    assert _query(
        busy.path, "SELECT message, actor FROM acta_events_view WHERE event = 'gate-changed'"
    ) == [("concurrency limit of key 'acme' set to 5 by ops:kim: big customer import", "ops:kim")]

    args = ["gates", "limit", "--key", "acme", "clear", "--expect-version", "1"]
    assert main([*args, "--database", str(busy.path)]) == 0
    assert "cleared (the declared limit applies); version 2" in capsys.readouterr().out
    acme = _gate(busy.path, capsys, "acme")
    assert (acme["limit"], acme["override"], acme["version"]) == (2, None, 2)


def test_limit_of_a_job_gate(busy: Busy, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["gates", "limit", "--job", "render-video", "1", "--expect-version", "0"]
    assert main([*args, "--database", str(busy.path)]) == 0
    gates = {g["name"]: g for g in _json(busy.path, capsys)["gates"]}
    assert (gates["render-video"]["limit"], gates["render-video"]["kind"]) == (1, "job")
    assert gates["acme"]["override"] is None  # a job gate is not the key of the same name


def test_a_stale_version_changes_nothing(busy: Busy, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["gates", "limit", "--key", "acme", "--database", str(busy.path)]
    assert main([*base, "3", "--expect-version", "0"]) == 0
    capsys.readouterr()
    assert main([*base, "9", "--expect-version", "0"]) == 1  # someone changed it meanwhile
    err = capsys.readouterr().err
    assert err.startswith("error: key gate 'acme': expected version 0, but it is at version 1")
    assert "`acta gates` shows the current version" in err and "Traceback" not in err
    assert _query(
        busy.path, "SELECT limit_override, version FROM acta_gates WHERE name = 'acme'"
    ) == [(3, 1)]


def test_a_limit_set_from_the_cli_applies_at_the_next_admission(
    acta_app: Acta, acta_host: Host, acta_provider: SqliteProvider
) -> None:
    peer = acta_host.add_worker()
    peer_saw: list[str] = []

    @acta_app.job("sync-account", concurrency_limit=2)
    def sync_account(n: int) -> None:
        if n == 1:
            peer_saw.append(acta_host.tick(peer))  # a second job of the key, while 1 runs

    first = sync_account.enqueue(1, concurrency_key="acme")
    second = sync_account.enqueue(2, concurrency_key="acme")
    # A key nobody has used yet is at version 0; the override lowers the declared 2 to 1.
    args = ["gates", "limit", "--key", "acme", "1", "--expect-version", "0"]
    assert main([*args, "--database", str(acta_provider.path)]) == 0

    assert acta_host.tick() == "completed"
    assert peer_saw == ["bounced"]
    assert acta_host.job(first).status is JobStatus.SUCCEEDED
    assert acta_host.job(second).status is JobStatus.READY


# -- overriding a rate ------------------------------------------------------------------------


def test_rate_set_and_clear(busy: Busy, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    base = ["gates", "rate", "carrier-api", "--database", str(busy.path)]
    assert main([*base, "5/s", "--expect-version", "0"]) == 0
    assert capsys.readouterr().out == "rate of meter 'carrier-api' set to 5/s; version 1\n"
    [meter] = _json(busy.path, capsys)["meters"]
    assert (meter["rate"], meter["declared_rate"], meter["overridden"]) == ("5/s", "1/s", True)

    assert main([*base, "clear", "--expect-version", "1"]) == 0
    assert "cleared (the declared rate applies); version 2" in capsys.readouterr().out
    [meter] = _json(busy.path, capsys)["meters"]
    assert (meter["rate"], meter["overridden"], meter["version"]) == ("1/s", False, 2)


def test_a_stale_meter_version_is_a_conflict(
    busy: Busy, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    args = ["gates", "rate", "carrier-api", "2/m", "--expect-version", "7"]
    assert main([*args, "--database", str(busy.path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: meter 'carrier-api': expected version 7, but it is at version 0")
    assert _query(busy.path, "SELECT rate_override FROM acta_meters") == [(None,)]


# -- bad usage --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["limit", "--key", "acme", "0"], "error: limit: got 0 (an int from 1 to 100000)"),
        (["limit", "--key", "acme", "many"], "error: limit: got 'many'"),
        (["limit", "--key", "", "3"], "error: key: is empty"),
        (["limit", "--job", "Bad_Name", "3"], "error: job name: 'Bad_Name'"),
        (["rate", "carrier-api", "10 per sec"], "error: rate: got '10 per sec'"),
        (["rate", "carrier-api", "0/s"], "error: rate: got '0/s'"),
        (["rate", " carrier-api", "10/s"], "error: meter:"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_bad_values_are_usage_errors_before_the_ledger_is_opened(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "absent.sqlite3"
    version = [] if "--expect-version" in args else ["--expect-version", "0"]
    assert main(["gates", *args, *version, "--database", str(path)]) == 2
    assert capsys.readouterr().err.startswith(message)
    assert not path.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["limit", "--key", "acme", "3"],  # no --expect-version
        ["limit", "3", "--expect-version", "0"],  # neither --key nor --job
        ["limit", "--key", "a", "--job", "b", "3", "--expect-version", "0"],
        ["rate", "carrier-api", "--expect-version", "0"],  # no rate
        ["limit", "--key", "acme", "3", "--expect-version", "-1"],
        ["rate", "carrier-api", "1/s", "--expect-version", "latest"],
    ],
    ids=" ".join,
)
def test_malformed_command_lines_exit_2(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gates", *args]) == 2
    assert "usage: acta gates" in capsys.readouterr().err


def test_a_missing_ledger_names_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "absent.sqlite3"
    args = ["gates", "limit", "--key", "acme", "3", "--expect-version", "0"]
    assert main([*args, "--database", str(path)]) == 1
    assert f"acta schema apply --database {path}" in capsys.readouterr().err
    assert not path.exists()


# -- where the options go -----------------------------------------------------------------------


def test_options_before_the_subcommand_are_kept(
    busy: Busy, capsys: pytest.CaptureFixture[str]
) -> None:
    # argparse would let the subcommand's defaults overwrite them (no ./acta.sqlite3 here).
    args = ["--key", "acme", "3", "--expect-version", "0"]
    assert main(["gates", "--database", str(busy.path), "limit", *args]) == 0
    assert main(["gates", "--database", str(busy.path), "--json", "list"]) == 0
    listed = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert [g["limit"] for g in listed["gates"] if g["name"] == "acme"] == [3]


@pytest.fixture
def host_app(busy: Busy) -> Iterator[Acta]:
    app = Acta(busy.path)
    yield app
    app.close()


def test_embedded_in_a_host_cli(
    host_app: Acta, busy: Busy, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="myproject")
    acta.cli.add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["gates", "limit", "--key", "acme", "4", "--expect-version", "0"])
    assert acta.cli.run(args, app=host_app) == 0
    assert acta.cli.run(parser.parse_args(["gates", "--json"]), app=host_app) == 0
    out = capsys.readouterr().out
    listed = json.loads(out.split("\n", 1)[1])
    assert [g["limit"] for g in listed["gates"] if g["name"] == "acme"] == [4]


def test_a_rate_set_before_first_use_reads_as_overridden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "jobs.sqlite3"
    assert main(["schema", "apply", "--database", str(path)]) == 0
    args = ["gates", "rate", "partner-api", "2/s", "--expect-version", "0"]
    # No definition feeds that meter yet: an override nothing would consult is refused.
    assert main([*args, "--database", str(path)]) == 2
    assert "no definition registered here feeds a meter" in capsys.readouterr().err
    app = Acta(path)
    app.define("call-partner", rate_limit="10/s", rate_key="partner-api")
    app.enqueue("call-partner")  # registers the definition; its meter is still unused
    app.close()
    assert main([*args, "--database", str(path)]) == 0
    assert _query(path, "SELECT rate_override FROM acta_meters") == [(2,)]  # an override
    [meter] = _json(path, capsys)["meters"]
    assert meter["overridden"] is True
