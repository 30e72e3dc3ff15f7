"""Developer sessions: lint, tests, conformance per provider, chaos, benchmarks.

`nox -s lint tests` is what CI runs (through .ci/run). Sessions install acta from this checkout
with the extras they need; nothing is assumed to be installed already.
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"
TEST_EXTRAS = ".[test,postgres,sqlalchemy]"


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


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The whole suite: unit, integration, docs examples and chaos, on every provider here."""
    session.install("-e", TEST_EXTRAS)
    args = session.posargs or ["-n", "2"]
    session.run("pytest", *args)


@nox.session(python=PYTHON)
@nox.parametrize("provider", ["sqlite", "postgres", "sqlserver"])
def conformance(session: nox.Session, provider: str) -> None:
    """The conformance specs on one provider."""
    session.install("-e", TEST_EXTRAS)
    session.run(
        "pytest",
        "conformance",
        "tests/integration",
        f"--acta-provider={provider}",
        *session.posargs,
    )


@nox.session(python=PYTHON)
def chaos(session: nox.Session) -> None:
    """Real worker processes killed on purpose (also part of `tests`)."""
    session.install("-e", TEST_EXTRAS)
    session.run("pytest", "chaos", "-m", "chaos", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks (anvil/): results go to docs/benchmarks/."""
    session.install("-e", ".[postgres]")
    session.run("python", "-m", "anvil.bench", *session.posargs, env={"PYTHONPATH": os.getcwd()})
