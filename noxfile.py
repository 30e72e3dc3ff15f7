"""Developer sessions: lint, tests, conformance per provider, chaos, benchmarks.

`nox -s lint tests` is what CI runs (through .ci/run, with CI=true): the whole suite on SQLite,
then the conformance specs on PostgreSQL. Sessions install acta from this checkout with the
extras they need; nothing is assumed to be installed already.
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"
TEST_EXTRAS = ".[test,postgres,sqlalchemy,dashboard,browser]"


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
# Asks, inside the session's environment, whether the tests can reach PostgreSQL at
# --acta-dsn's default ($ACTA_TEST_DSN or the local test database); prints why not, or nothing.
POSTGRES_PROBE = (
    "from acta_testing.plugin import postgres_dsn; "
    "from acta_testing.schemas import postgres_unavailable; "
    "print(postgres_unavailable(postgres_dsn()) or '')"
)


def _postgres_unavailable(session: nox.Session) -> str:
    """Why PostgreSQL cannot be used by the tests ("" when it can)."""
    out = session.run("python", "-c", POSTGRES_PROBE, silent=True)
    return out.strip() if isinstance(out, str) else ""


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Everything on SQLite, then the conformance specs on PostgreSQL.

    The first run is unit, integration, chaos and conformance on SQLite (the PostgreSQL-specific
    integration tests pick PostgreSQL themselves). Without a PostgreSQL server the second run
    cannot happen: the session says so plainly, and under CI=true it fails instead. Extra
    arguments go to both runs."""
    session.install("-e", TEST_EXTRAS)
    missing = _postgres_unavailable(session)
    if missing and _ci():
        session.error(f"PostgreSQL was not run: {missing} (CI=true requires PostgreSQL)")
    session.run("pytest", "--acta-provider=sqlite", *XDIST, *session.posargs)
    if missing:
        session.warn(f"PostgreSQL was not run: {missing}")
        return
    session.run("pytest", "conformance", "--acta-provider=postgres", *XDIST, *session.posargs)


@nox.session(python=PYTHON)
@nox.parametrize("provider", ["sqlite", "postgres", "sqlserver"])
def conformance(session: nox.Session, provider: str) -> None:
    """The conformance specs on one provider (the DSN: --acta-dsn or $ACTA_TEST_DSN)."""
    session.install("-e", TEST_EXTRAS)
    session.run("pytest", "conformance", f"--acta-provider={provider}", *XDIST, *session.posargs)


@nox.session(python=PYTHON)
def chaos(session: nox.Session) -> None:
    """Real worker processes killed on purpose (also part of `tests`)."""
    session.install("-e", TEST_EXTRAS)
    session.run("pytest", "chaos", "-m", "chaos", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks (anvil/): results go to docs/benchmarks/.

    psycopg's C implementation (the binary wheel, which the postgres extra brings) is what a
    production install should use; the pure-Python one is several times slower per statement."""
    session.install("-e", ".[postgres]", "psycopg[binary]")
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
