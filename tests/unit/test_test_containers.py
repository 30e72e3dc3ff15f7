"""Where a server provider's tests get their database: a DSN, the local default, a throwaway
Docker container shared by the session's processes, or a refusal naming both ways out.

The probes (does the default answer, does Docker answer) are injected: this machine has no
Docker engine. The container start itself runs only where Docker answers.
"""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from acta_testing.containers import (
    IMAGES,
    RECIPES,
    Decision,
    Started,
    decide,
    docker_unreachable,
    leave,
    session_database,
    session_root,
    shared_server,
    start_container,
)


def _decide(
    given: str | None = None,
    environ: dict[str, str] | None = None,
    default: str | None = "postgresql://postgres@127.0.0.1:5432/test",
    answers: bool = False,
    docker: str | None = None,
) -> Decision:
    return decide(
        "postgres",
        "PostgreSQL",
        "ACTA_TEST_DSN",
        given,
        environ or {},
        default,
        lambda dsn: answers,
        lambda: docker,
    )


def test_a_given_dsn_wins_without_probing_anything() -> None:
    def never() -> str | None:
        raise AssertionError("Docker was probed")

    found = decide(
        "postgres", "PostgreSQL", "ACTA_TEST_DSN", "postgresql://h/db", {}, None, bool, never
    )
    assert found == Decision("dsn", dsn="postgresql://h/db", message="PostgreSQL at the given DSN")
    from_env = _decide(environ={"ACTA_TEST_DSN": "postgresql://env/db"}, docker="no")
    assert (from_env.kind, from_env.dsn) == ("dsn", "postgresql://env/db")


def test_the_local_default_is_used_when_it_answers() -> None:
    found = _decide(answers=True, docker="no engine")
    assert (found.kind, found.dsn) == ("dsn", "postgresql://postgres@127.0.0.1:5432/test")


def test_docker_starts_a_container_when_nothing_else_answers() -> None:
    found = _decide(answers=False, docker=None)
    assert found.kind == "container"
    assert found.image == "postgres:15-alpine"
    assert "throwaway Docker container (postgres:15-alpine)" in found.message


def test_without_docker_the_refusal_names_both_ways_out() -> None:
    found = _decide(answers=False, docker="Error while fetching server API version")
    assert found.kind == "refuse"
    assert found.message.startswith("no database given (postgresql://postgres@127.0.0.1")
    assert "--acta-dsn or $ACTA_TEST_DSN" in found.message  # way out one: a DSN
    assert "start a Docker engine" in found.message  # way out two: Docker
    assert "Error while fetching server API version" in found.message  # and why Docker is not


def test_sqlserver_and_mariadb_have_images() -> None:
    for name, image in [("sqlserver", "mssql/server"), ("mariadb", "mariadb:10.11")]:
        found = decide(name, name, "X", None, {}, None, bool, lambda: None)
        assert found.kind == "container" and image in found.image


def test_every_image_has_a_recipe_whose_dsn_its_provider_takes() -> None:
    assert set(RECIPES) == set(IMAGES)
    for name in ("postgres", "mariadb"):  # the registered ones: their entries judge the DSN
        from acta.provider import registry

        dsn = RECIPES[name][4].format(host="127.0.0.1", port=1)
        assert registry.for_target(dsn).name == name


def test_the_session_root_is_shared_by_xdist_workers(tmp_path: Path) -> None:
    assert session_root(tmp_path / "popen-gw1", "gw1") == tmp_path
    assert session_root(tmp_path, None) == tmp_path


def test_one_process_starts_the_server_and_the_others_wait_for_it(tmp_path: Path) -> None:
    starts: list[int] = []
    go = threading.Event()

    def start() -> Started:
        starts.append(1)
        go.wait(10)  # the others ask while this one is still starting
        return Started("postgresql://shared/db", lambda: None)

    answers: list[tuple[str, bool]] = []

    def ask() -> None:
        dsn, started = shared_server("postgres", tmp_path, start, timeout=20)
        answers.append((dsn, started is not None))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(30)
    assert starts == [1]
    assert sorted(answers) == [("postgresql://shared/db", False)] * 3 + [
        ("postgresql://shared/db", True)
    ]


def _ask_in_a_process(root: str, out: multiprocessing.Queue[str]) -> None:
    dsn, _ = shared_server("mariadb", Path(root), lambda: Started("mysql://p/db", lambda: None))
    out.put(dsn)


def test_processes_share_it_too(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue[str] = ctx.Queue()
    procs = [ctx.Process(target=_ask_in_a_process, args=(str(tmp_path), out)) for _ in range(2)]
    for p in procs:
        p.start()
    found = sorted(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(30)
    assert found == ["mysql://p/db", "mysql://p/db"]
    assert len(list((tmp_path / "acta-containers").iterdir())) == 1


def test_a_failed_start_is_reported_to_the_waiting_processes(tmp_path: Path) -> None:
    def broken() -> Started:
        raise OSError("image pull refused")

    with pytest.raises(OSError, match="image pull refused"):
        shared_server("postgres", tmp_path, broken)
    with pytest.raises(RuntimeError, match="failed to start: OSError: image pull refused"):
        shared_server("postgres", tmp_path, broken)


def test_a_start_that_never_comes_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "acta-containers" / "postgres").mkdir(parents=True)  # someone else's start
    waited: list[float] = []
    with pytest.raises(RuntimeError, match="did not start within 1 s"):
        shared_server("postgres", tmp_path, pytest.fail, timeout=1, pause=waited.append)
    assert 9 <= len(waited) <= 11  # polled, bounded, without sleeping here


def test_the_container_starts_where_docker_answers() -> None:
    why = docker_unreachable()
    if why is not None:
        pytest.skip(f"no Docker engine here: {why}")
    started = start_container("postgres")
    try:
        assert started.dsn.startswith("postgresql://postgres:acta@")
    finally:
        started.stop()


def test_the_starter_stops_the_server_once_every_user_left(tmp_path: Path) -> None:
    stopped: list[str] = []
    started = Started("postgresql://shared/db", lambda: stopped.append("stop"))
    dsn, mine = shared_server("postgres", tmp_path, lambda: started, member="gw0")
    assert mine is started
    assert shared_server("postgres", tmp_path, pytest.fail, member="gw1") == (dsn, None)
    waited: list[float] = []

    def gw1_leaves_while_gw0_waits(seconds: float) -> None:
        waited.append(seconds)
        leave("postgres", tmp_path, None, member="gw1")

    leave("postgres", tmp_path, mine, member="gw0", pause=gw1_leaves_while_gw0_waits)
    assert waited == [0.1] and stopped == ["stop"]  # it waited for gw1, then stopped
    with pytest.raises(RuntimeError, match="already stopped"):
        shared_server("postgres", tmp_path, pytest.fail, member="gw2")  # a late asker


def test_session_database_follows_the_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acta.provider import registry
    from acta.provider.testing import ProviderUnavailable

    postgres = registry.entry("postgres")
    monkeypatch.delenv(postgres.dsn_env, raising=False)
    dsn, finish = session_database(postgres, "postgresql://given/db", tmp_path, None)
    assert dsn == "postgresql://given/db"
    finish()
    with pytest.raises(ProviderUnavailable, match="Either give a test database with --acta-dsn"):
        session_database(
            postgres, None, tmp_path, None, default_answers=lambda d: False, docker=lambda: "no"
        )
    said: list[str] = []
    stops: list[int] = []
    dsn, finish = session_database(
        postgres,
        None,
        tmp_path / "popen-gw0",
        "gw0",
        default_answers=lambda dsn: False,
        docker=lambda: None,
        start=lambda name: Started(f"postgresql://{name}-container/test", lambda: stops.append(1)),
        say=said.append,
    )
    assert dsn == "postgresql://postgres-container/test"
    assert said == [
        "PostgreSQL in a throwaway Docker container (postgres:15-alpine), one for this session"
    ]
    assert (tmp_path / "acta-containers" / "postgres" / "users" / "gw0").exists()
    finish()
    assert stops == [1]
