"""Developer sessions: lint, tests, conformance per provider, chaos, packaging, benchmarks.

`nox -s lint tests conformance_matrix package frameworks` is what CI runs (through .ci/run,
with CI=true): the whole suite on SQLite, then the conformance specs on PostgreSQL, on the
default Python; the SQLite conformance specs on each other Python of the matrix; then the wheel
and sdist built and the wheel tested in a fresh environment; then the framework integrations
(Django 6, ASGI, Flask) on Python 3.12. Sessions install acta from this checkout with the
extras they need; nothing is assumed to be installed already.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import nox

nox.options.sessions = ["lint", "tests", "conformance_matrix", "package", "frameworks"]
nox.options.reuse_existing_virtualenvs = True
# An interpreter that is missing is an error to fix on the machine, never a download.
nox.options.download_python = "never"

PYTHON = "3.11"
# The other Pythons CI runs the conformance specs on (pyproject.toml's classifiers name the same
# set). Python 3.14 is not here: no 3.14 interpreter can be installed on this project's machines
# (pyenv builds from python.org's tarballs, which they cannot reach; Debian 12 packages 3.11;
# no package registry they reach ships a CPython 3.14 build).
MATRIX = ["3.12", "3.13"]


def _pyenv_pythons(versions: list[str]) -> None:
    """Put pyenv's interpreters for ``versions`` on PATH.

    pyenv's shims answer only for the versions a shell selected, so ``python3.12`` fails
    through its shim while /root/.pyenv/versions/3.12.x holds it; nox then finds it by name."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = []
    for version in versions:
        builds = sorted(root.glob(f"{version}.*/bin/python{version}"), key=_release)
        if builds:
            found.append(str(builds[-1].parent))
    if found:
        os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", "")])


def _release(python: Path) -> tuple[int, ...]:
    """3.12.10 after 3.12.9; a free-threaded or dev build (3.13.0t, 3.14-dev) sorts first."""
    name = python.parent.parent.name
    parts = name.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else (0,)


_pyenv_pythons(MATRIX)
TEST_EXTRAS = ".[test,postgres,mariadb,sqlalchemy,dashboard,browser]"


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff (lint and format) and mypy --strict on the public packages."""
    session.install("-e", TEST_EXTRAS, "ruff>=0.6", "mypy>=1.10")
    session.run(
        "ruff",
        "check",
        "acta",
        "acta_testing",
        "tests",
        "chaos",
        "anvil",
        "conformance",
        "noxfile.py",
    )
    session.run(
        "ruff",
        "format",
        "--check",
        "acta",
        "acta_testing",
        "tests",
        "chaos",
        "anvil",
        "conformance",
        "noxfile.py",
    )
    session.run("mypy", "acta", "acta_testing")


XDIST = ["-n", "2"]
# Asks, inside the session's environment, which registered providers need a server and why
# each cannot run here (acta/provider/servers.py): one JSON object on stdout.
SERVERS_PROBE = ["python", "-m", "acta.provider.servers"]


def _providers(session: nox.Session) -> dict[str, Any]:
    """{"everything": the provider the whole suite runs on, "servers": [{"name", "title",
    "dsn_env", "unavailable"}]}, from the registry of the checkout being tested."""
    out = session.run(*SERVERS_PROBE, silent=True)
    if not isinstance(out, str):  # `nox --install-only`: nothing runs
        return {"everything": "", "servers": []}
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return found


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Everything on SQLite, then the conformance specs on each server provider.

    The first run is unit, integration, chaos and conformance on the registry's fallback
    provider, SQLite (the integration tests about one server provider pick it themselves). Then
    the conformance specs run once per provider whose registry entry names a test database
    (``test_dsn``, overridden by its ``$ACTA_TEST_<NAME>_DSN``; PostgreSQL's is
    ``$ACTA_TEST_DSN``), in registry order. A server that cannot be reached is said plainly and
    skipped; under CI=true the session fails instead, before running anything. Extra arguments
    go to every run."""
    session.install("-e", TEST_EXTRAS)
    providers = _providers(session)
    missing = {s["title"]: s["unavailable"] for s in providers["servers"] if s["unavailable"]}
    if missing and _ci():
        said = "; ".join(f"{title}: {why}" for title, why in missing.items())
        session.error(f"not run: {said} (CI=true requires every provider)")
    # tests/frameworks and tests/package have sessions of their own (frameworks: Python 3.12,
    # real servers; package: the built wheel in a fresh environment).
    everything = [
        f"--acta-provider={providers['everything']}",
        "--ignore=tests/frameworks",
        "--ignore=tests/package",
    ]
    session.run("pytest", *everything, *XDIST, *session.posargs)
    for server in providers["servers"]:
        if server["unavailable"]:
            session.warn(
                f"{server['title']} was not run: {server['unavailable']} "
                f"(set ${server['dsn_env']} to its test database)"
            )
            continue
        run = ["pytest", "conformance", f"--acta-provider={server['name']}"]
        session.run(*run, *XDIST, *session.posargs)


@nox.session(python=PYTHON)
@nox.parametrize("provider", ["sqlite", "postgres", "mariadb", "sqlserver"])
def conformance(session: nox.Session, provider: str) -> None:
    """The conformance specs on one provider (the DSN: --acta-dsn or $ACTA_TEST_DSN).

    A provider that cannot run here (not registered yet, or its server cannot be reached)
    fails the session with "<title> was not run: <reason>": every spec skipping would
    otherwise end green while testing nothing."""
    session.install("-e", TEST_EXTRAS)
    why = _not_run(session, provider)
    if why:
        session.error(why)
    session.run("pytest", "conformance", f"--acta-provider={provider}", *XDIST, *session.posargs)


# How "was not run" names a provider the registry does not list yet.
UNREGISTERED_TITLES = {"sqlserver": "SQL Server"}


def _not_run(session: nox.Session, provider: str) -> str:
    """Why ``conformance`` cannot run ``provider`` here, or "" when it can. A DSN given on
    the command line (--acta-dsn) is not probed: pytest reports it if it does not answer."""
    providers = _providers(session)
    if provider == providers["everything"] or not providers["everything"]:
        return ""  # the fallback needs no server; "" is `nox --install-only`, running nothing
    for server in providers["servers"]:
        if server["name"] != provider:
            continue
        if not server["unavailable"] or any(a.startswith("--acta-dsn") for a in session.posargs):
            return ""
        return (
            f"{server['title']} was not run: {server['unavailable']} "
            f"(set ${server['dsn_env']} to its test database)"
        )
    title = UNREGISTERED_TITLES.get(provider, provider)
    return (
        f"{title} was not run: no {provider!r} provider is registered "
        f"(acta.provider.{provider} is not implemented yet)"
    )


@nox.session(python=MATRIX)
def conformance_matrix(session: nox.Session) -> None:
    """The conformance specs on SQLite on each Python of MATRIX (`tests` runs everything on
    PYTHON). pytest's closing line gives each version's counts."""
    # The test extra (whatever the specs import) and the dashboard's filters; not the drivers
    # or the browser, which the SQLite specs do not need.
    session.install("-e", ".[test,dashboard]")
    session.run("python", "--version")
    session.run("pytest", "conformance", "--acta-provider=sqlite", *XDIST, *session.posargs)


# Django 6 (django.tasks) needs Python 3.12+: the framework integrations are tested there.
FRAMEWORKS_PYTHON = "3.12"
# Each Django minor release that has django.tasks (6.1 is on the index), x SQLite and PostgreSQL.
DJANGO_RELEASES = ["6.0", "6.1"]
FRAMEWORK_PACKAGES = ["pytest-django>=4.9", "flask>=3.0", "flask-sqlalchemy>=3.1"]


@nox.session(python=FRAMEWORKS_PYTHON)
def frameworks(session: nox.Session) -> None:
    """tests/frameworks: the ASGI lifespan (in process and real uvicorn processes) and Flask,
    then Django's tasks backend under pytest-django for each of DJANGO_RELEASES on SQLite and
    PostgreSQL; ends with the counts of each combination. ACTA_FRAMEWORKS=required makes a
    missing framework an error; under CI=true a PostgreSQL that cannot be reached, or any
    skipped test, fails the session."""
    session.install("-e", ".[test,postgres,sqlalchemy,dashboard]", *FRAMEWORK_PACKAGES)
    servers = {s["name"]: s for s in _providers(session)["servers"]}
    down = servers.get("postgres", {}).get("unavailable", "no PostgreSQL provider is registered")
    if down and _ci():
        session.error(f"not run: PostgreSQL: {down} (CI=true requires it)")
    results = Path(tempfile.mkdtemp(prefix="acta-frameworks-"))
    counts: dict[str, dict[str, int]] = {}

    def run(label: str, *args: str, **env: str) -> None:
        report = results / f"{len(counts)}.xml"
        session.run(
            "pytest", *args, f"--junitxml={report}", *session.posargs,
            env={"ACTA_FRAMEWORKS": "required", **env},
        )  # fmt: skip
        counts[label] = _junit_counts(report)

    # One at a time: the uvicorn tests time a shutdown against its grace.
    run("asgi + flask", "tests/frameworks/asgi", "tests/frameworks/flask", "-n", "0")
    for release in DJANGO_RELEASES:
        session.install(f"django~={release}.0")
        for database in ("sqlite", "postgres"):
            if database == "postgres" and down:
                session.warn(f"Django {release} on PostgreSQL was not run: {down}")
                continue
            # The 500-orders test (a worker process and a producer, 500 atomic blocks) is run
            # by hand: `nox -s frameworks -- -k 500_orders`. It takes 30 s to 2 min alone, and
            # more than 4 min on SQLite on a loaded two-core machine: too slow for every CI run.
            django = ["tests/frameworks/django", "--ds=project.settings", "-n", "0"]
            django += ["-k", "not 500_orders"] if "-k" not in session.posargs else []
            if release != DJANGO_RELEASES[-1]:
                # The real-process tests run on the newest release only: they test acta's
                # command, not Django.
                django += ["-m", "not chaos"]
            run(f"django {release} {database}", *django, ACTA_DJANGO_DB=database)
    for label, count in counts.items():
        session.log(f"{label}: " + ", ".join(f"{n} {k}" for k, n in count.items()))
    skipped = [label for label, count in counts.items() if count["skipped"]]
    if skipped and _ci():
        session.error(f"skipped tests in {', '.join(skipped)} (CI=true allows none)")
    shutil.rmtree(results, ignore_errors=True)


def _junit_counts(report: Path) -> dict[str, int]:
    """passed/failed/skipped from a pytest JUnit report (its one testsuite element)."""
    from xml.etree import ElementTree

    suite = ElementTree.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    total, failed = int(suite.get("tests", 0)), int(suite.get("failures", 0))
    errors, skipped = int(suite.get("errors", 0)), int(suite.get("skipped", 0))
    passed = total - failed - errors - skipped
    return {"passed": passed, "failed": failed + errors, "skipped": skipped}


@nox.session(python=PYTHON)
def package(session: nox.Session) -> None:
    """Build the sdist and wheel (the wheel from the sdist), check them with twine, then test
    them as a user gets them (tests/package): every source file in the wheel, the wheel
    installed with its extras into a fresh venv and run from outside the checkout (`acta demo`,
    `acta schema sql` for each provider, each extra's imports, the pytest plugin), and a user
    file type-checked against it."""
    session.install(
        "build>=1.2", "twine>=5", "pytest>=8", "pytest-timeout>=2.3", "pytest-asyncio", "hypothesis"
    )
    # Outside the checkout, like the fresh venv pytest makes: no path under it names the source.
    dist = Path(tempfile.mkdtemp(prefix="acta-dist-"))
    try:
        session.run("python", "-m", "build", "--outdir", str(dist))
        session.run("twine", "check", "--strict", *sorted(str(p) for p in dist.iterdir()))
        session.run("pytest", "tests/package", *session.posargs, env={"ACTA_DIST_DIR": str(dist)})
    finally:
        shutil.rmtree(dist, ignore_errors=True)


@nox.session(python=PYTHON)
def chaos(session: nox.Session) -> None:
    """Real worker processes killed on purpose (also part of `tests`)."""
    session.install("-e", TEST_EXTRAS)
    session.run("pytest", "chaos", "-m", "chaos", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks (anvil/): results go to docs/benchmarks/.

    psycopg's C implementation (the binary wheel, which the postgres extra brings) is what a
    production install should use; the pure-Python one is several times slower per statement.
    MariaDB runs through PyMySQL (the mariadb extra), at $ACTA_BENCH_MARIADB_DSN or the local
    default."""
    session.install("-e", ".[postgres,mariadb]", "psycopg[binary]")
    session.run("python", "-m", "anvil.bench", *session.posargs, env={"PYTHONPATH": os.getcwd()})


@nox.session(python=PYTHON, name="bench-peers")
def bench_peers(session: nox.Session) -> None:
    """acta side by side with pgqueuer and procrastinate (their latest releases, installed here
    from PyPI and only driven through their public APIs): docs/benchmarks/<date>-peers-*."""
    session.install("-e", ".[postgres]", "psycopg[binary]", "pgqueuer[asyncpg]", "procrastinate")
    session.run(
        "python", "-m", "anvil.bench_peers", *session.posargs, env={"PYTHONPATH": os.getcwd()}
    )


@nox.session(python=PYTHON)
def certify(session: nox.Session) -> None:
    """The chaos certification (anvil/certify; docs/certification/README.md), for example
    `nox -s certify -- --provider postgres --tier B --out docs/certification`. Tier A on both
    providers also runs in `tests`, as chaos/test_certify.py."""
    session.install("-e", TEST_EXTRAS)
    session.run(
        "python", "-m", "anvil", "certify", *session.posargs, env={"PYTHONPATH": os.getcwd()}
    )


@nox.session(python=PYTHON)
def lab(session: nox.Session) -> None:
    """The Anvil lab (anvil/lab/): `nox -s lab -- --provider sqlite --port 8765`, or a
    non-interactive drain with `-- --jobs 1000000 --kill-every 10 --until-drained --record F`."""
    session.install("-e", ".[postgres]", "psycopg[binary]")
    session.run("python", "-m", "anvil", "lab", *session.posargs, env={"PYTHONPATH": os.getcwd()})
