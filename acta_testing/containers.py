"""Throwaway test databases in Docker, when a server provider's tests are given no database.

``--acta-provider=postgres|mariadb|sqlserver`` needs a server. Where it comes from, in order:

1. a DSN the user gave (``--acta-dsn`` or the provider's ``$ACTA_TEST_<NAME>_DSN``): used as is;
2. the provider's local default test database (``test_dsn``), if it answers;
3. a Docker engine that answers: one throwaway server per test session, shared by every
   pytest-xdist worker of that session, started by whichever process asks first;
4. otherwise a refusal that names both ways out: a DSN, or a Docker engine.

``decide`` is that choice, pure: the probes (does the default answer, does Docker answer) are
passed in, so the logic is unit-tested on a machine without Docker. ``shared_server`` is the
session-wide sharing: a lock directory under the session's basetemp root (``os.mkdir`` is
atomic), the first process starts the server and publishes its DSN in a file, the others wait
for it with a bound. ``start_container`` runs the image through testcontainers (the
``containers`` extra) and is only exercised where Docker exists.

Not wired into acta_testing/plugin.py yet (the plugin's owner does that): ``session_database``
is the one call it needs, where it resolves ``--acta-dsn`` today, and the finisher it returns
runs at the end of the session (``leave``: the starter waits for the other users, then stops
the server).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acta.provider.registry import ProviderEntry

# The image each server provider's throwaway database runs, and how its DSN is written.
IMAGES = {
    "postgres": "postgres:15-alpine",
    "mariadb": "mariadb:10.11",
    "sqlserver": "mcr.microsoft.com/mssql/server:2022-latest",
}
START_TIMEOUT = 300.0
"""Seconds a process waits for another one's container (an image pull included)."""
FOLDER = "acta-containers"


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a server provider's tests get their database."""

    kind: str
    """``dsn`` (given or the local default), ``container``, or ``refuse``."""
    dsn: str = ""
    image: str = ""
    message: str = ""
    """What the run says about it (the reason, for ``refuse``)."""


def decide(
    name: str,
    title: str,
    dsn_env: str,
    given: str | None,
    environ: Mapping[str, str],
    default: str | None,
    default_answers: Callable[[str], bool],
    docker_unreachable: Callable[[], str | None],
) -> Decision:
    """Choose the database for ``name``'s tests. ``given`` is ``--acta-dsn``; ``default`` the
    entry's ``test_dsn``; ``default_answers(dsn)`` says whether a server answers there;
    ``docker_unreachable()`` is None when a Docker engine answers, else why not."""
    chosen = given or environ.get(dsn_env)
    if chosen:
        return Decision("dsn", dsn=chosen, message=f"{title} at the given DSN")
    if default and default_answers(default):
        return Decision("dsn", dsn=default, message=f"{title} at the local default {default}")
    image = IMAGES.get(name)
    if image is None:
        return Decision("refuse", message=f"{title}: no DSN given and no container image known")
    why = docker_unreachable()
    if why is None:
        return Decision(
            "container",
            image=image,
            message=f"{title} in a throwaway Docker container ({image}), one for this session",
        )
    tried = f" ({default} does not answer)" if default else ""
    return Decision(
        "refuse",
        message=(
            f"no database given{tried} and no Docker engine answers "
            f"({why}). Either give a test database with --acta-dsn or ${dsn_env}, or start a "
            f"Docker engine (with the containers extra: pip install 'acta-jobs[containers]') "
            f"so the tests run a throwaway {image}"
        ),
    )


def docker_unreachable() -> str | None:
    """None when a Docker engine answers here; otherwise why not (no client library, no
    engine at DOCKER_HOST or the default socket)."""
    try:
        # Imported by name: the client library is optional, and untyped.
        docker = import_module("docker")
    except ImportError:
        return "the containers extra is not installed"
    try:
        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # the client raises many kinds; each means "not here"
        text = str(exc).strip().splitlines()
        return text[0] if text else type(exc).__name__
    return None


@dataclass(frozen=True, slots=True)
class Started:
    """A server one process started: its DSN, and how to stop it."""

    dsn: str
    stop: Callable[[], None]


def session_database(
    entry: ProviderEntry,
    given: str | None,
    basetemp: Path,
    xdist_worker: str | None,
    *,
    default_answers: Callable[[str], bool] | None = None,
    docker: Callable[[], str | None] = docker_unreachable,
    start: Callable[[str], Started] | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[str, Callable[[], None]]:
    """The one call the plugin makes: the DSN this session's tests of ``entry`` use (``given``
    is ``--acta-dsn``), and what to call at the end of the session. ProviderUnavailable, the
    plugin's skip (a failure under CI=true), when there is none, naming both ways out. ``say``
    is told which database it is (stderr by default)."""
    from acta.provider.servers import unavailable
    from acta.provider.testing import ProviderUnavailable

    def answers(dsn: str) -> bool:
        return unavailable(entry, dsn) == ""

    decision = decide(
        entry.name,
        entry.title,
        entry.dsn_env,
        given,
        os.environ,
        entry.test_dsn,
        default_answers or answers,
        docker,
    )
    if decision.kind == "refuse":
        raise ProviderUnavailable(decision.message)
    if decision.kind == "dsn":
        return decision.dsn, lambda: None
    root, member = session_root(basetemp, xdist_worker), xdist_worker or "main"
    run = start or start_container
    dsn, started = shared_server(entry.name, root, lambda: run(entry.name), member=member)
    (say or _stderr)(decision.message)
    return dsn, lambda: leave(entry.name, root, started, member=member)


def _stderr(text: str) -> None:
    sys.stderr.write(f"acta: {text}\n")


def session_root(basetemp: Path, xdist_worker: str | None) -> Path:
    """The folder every process of one test session shares: the basetemp itself, or its
    parent under pytest-xdist (each worker's basetemp is ``<root>/popen-gwN``)."""
    return basetemp.parent if xdist_worker else basetemp


def shared_server(
    name: str,
    root: Path,
    start: Callable[[], Started],
    *,
    member: str = "main",
    timeout: float = START_TIMEOUT,
    pause: Callable[[float], None] = time.sleep,
) -> tuple[str, Started | None]:
    """The DSN of the session's ``name`` server, starting it if this process is the first to
    ask: ``(dsn, started)`` where ``started`` is set only in the process that started it.
    Others wait up to ``timeout`` seconds, polling the DSN file; a start that failed elsewhere
    is reported here too (RuntimeError). Each caller (``member``: its xdist worker id) counts
    as a user until it calls ``leave``."""
    folder = root / FOLDER / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    answer = folder / "server.json"
    try:
        folder.mkdir()
    except FileExistsError:
        dsn = _wait_for(answer, name, timeout, pause)
        _join(folder, member)
        return dsn, None
    _join(folder, member)
    try:
        started = start()
    except Exception as exc:
        _publish(answer, {"error": f"{type(exc).__name__}: {exc}"})
        raise
    _publish(answer, {"dsn": started.dsn})
    return started.dsn, started


def leave(
    name: str,
    root: Path,
    started: Started | None,
    *,
    member: str = "main",
    timeout: float = START_TIMEOUT,
    pause: Callable[[float], None] = time.sleep,
) -> None:
    """End ``member``'s use of the session's server. The process that started it waits (up to
    ``timeout`` seconds) for the other users to leave, marks it stopped, then stops it."""
    folder = root / FOLDER / name
    (folder / "users" / member).unlink(missing_ok=True)
    if started is None:
        return
    waited = 0.0
    while any((folder / "users").iterdir()) and waited < timeout:
        pause(0.1)
        waited += 0.1
    _publish(folder / "server.json", {"stopped": "its session ended"})
    started.stop()


def _join(folder: Path, member: str) -> None:
    (folder / "users").mkdir(exist_ok=True)
    (folder / "users" / member).touch()


def _publish(path: Path, value: dict[str, str]) -> None:
    part = path.with_suffix(".part")
    part.write_text(json.dumps(value))
    os.replace(part, path)  # readers see the whole file or none


def _wait_for(path: Path, name: str, timeout: float, pause: Callable[[float], None]) -> str:
    waited = 0.0
    while not path.exists():
        if waited >= timeout:
            raise RuntimeError(f"the {name} test container did not start within {timeout:g} s")
        pause(0.1)
        waited += 0.1
    found = json.loads(path.read_text())
    if "stopped" in found:
        raise RuntimeError(f"the {name} test container was already stopped: {found['stopped']}")
    if "error" in found:
        raise RuntimeError(f"the {name} test container failed to start: {found['error']}")
    return str(found["dsn"])


# How testcontainers runs each image: its module and class, the constructor's arguments, the
# port the server listens on inside the container, and the DSN acta's provider takes.
RECIPES: dict[str, tuple[str, str, dict[str, str], int, str]] = {
    "postgres": (
        "testcontainers.postgres",
        "PostgresContainer",
        {"username": "postgres", "password": "acta", "dbname": "test"},
        5432,
        "postgresql://postgres:acta@{host}:{port}/test",
    ),
    "mariadb": (
        "testcontainers.mysql",
        "MySqlContainer",
        {"username": "root", "password": "acta", "dbname": "test"},
        3306,
        "mysql://root:acta@{host}:{port}/test",
    ),
    "sqlserver": (
        "testcontainers.mssql",
        "SqlServerContainer",
        {"password": "Acta-test-1", "dbname": "test"},
        1433,
        "mssql://sa:Acta-test-1@{host}:{port}/test",
    ),
}


def start_container(name: str) -> Started:
    """Run ``IMAGES[name]`` through testcontainers and wait until it takes connections."""
    module, kind, arguments, port, dsn = RECIPES[name]
    server = getattr(import_module(module), kind)(IMAGES[name], **arguments)
    server.start()
    host, exposed = server.get_container_host_ip(), server.get_exposed_port(port)
    return Started(dsn.format(host=host, port=exposed), server.stop)
