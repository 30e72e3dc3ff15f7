"""Dialect facts live in the provider folders: no code outside ``acta/provider/<name>/`` names a
database or imports a driver, except the places listed below, each with its reason.

A third provider is one folder and one registry line (docs/internals/providers.md): whatever
code outside its folder says "postgres" or imports psycopg is a place that provider would have
to edit, or worse, a branch it would silently fall into. The scan reads code, not prose:
imports, names, and string literals that are not documentation (docstrings and bare strings
documenting an attribute). Words in prose ("a SQLite path or a PostgreSQL URL") are fine; the
lowercase identifiers code compares and imports are what it looks for.

Scanned: the library (``acta``, ``acta_testing``), the conformance suite, the invariant checks
(``anvil/checks``) and the noxfile. Not scanned: ``tests/`` (tests about one provider are named
for it), ``chaos/`` and the rest of ``anvil/`` (benchmarks, certification fleets and chaos runs
choose and compare providers on purpose).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("acta", "acta_testing", "conformance", "anvil/checks", "noxfile.py")
PROVIDER_FOLDER = re.compile(r"^acta/provider/[a-z0-9_]+/")
# Dialect names and the drivers of the providers acta has or plans, as code spells them.
WORD = re.compile(
    r"(?<![a-z0-9])(sqlite3?|aiosqlite|psycopg[a-z0-9_]*|postgres(?:ql)?|asyncpg|pg8000|"
    r"mariadb|mysql[a-z0-9_]*|pymysql|aiomysql|asyncmy|mssql|sqlserver|pyodbc|aioodbc|pymssql)"
    r"(?![a-z0-9])"
)

# path -> (the words it may use, why). Keep each reason true; remove an entry once its file
# no longer needs it (a test below fails on an entry that allows more than the file uses).
ALLOWED: dict[str, tuple[frozenset[str], str]] = {
    "acta/provider/registry.py": (
        frozenset({"sqlite", "postgres", "mariadb"}),
        "PROVIDER_MODULES: the registry's one line per provider package",
    ),
    "acta/provider/factory.py": (
        frozenset({"sqlite", "sqlite3"}),
        "the default ledger (./acta.sqlite3, no configuration) is a SQLite file by product "
        "design; sqlite_path is re-exported for the CLI",
    ),
    "acta/contrib/django/checks.py": (
        frozenset({"postgresql", "sqlite3", "psycopg", "psycopg2", "postgres"}),
        "Django's own ENGINE names, and the system check that refuses psycopg2 for psycopg 3",
    ),
    "acta/contrib/django/ledger.py": (
        frozenset({"sqlite", "sqlite3", "postgresql"}),
        "maps a Django connection's vendor and settings to the database URL acta opens",
    ),
    "acta/cli/demo.py": (
        frozenset({"sqlite", "sqlite3"}),
        "`acta demo` makes a SQLite ledger by design (nothing to install or start)",
    ),
    "acta/cli/ledger.py": (
        frozenset({"sqlite", "sqlite3", "postgresql"}),
        "--database help text naming the target kinds and the default file",
    ),
    "acta/clock.py": (
        frozenset({"sqlite3"}),
        "the embedded database's clock (SQLite's own, which time-patching libraries cannot "
        "reach) is read here: the house rule lets only acta/clock.py read time",
    ),
    "acta/cli/main.py": (
        frozenset({"sqlite3"}),
        "the --help epilog names the default ledger file, ./acta.sqlite3",
    ),
    "conformance/outbox_support.py": (
        frozenset({"sqlite3"}),
        "the outbox specs' source is an application's own SQLite file whatever the ledger's "
        "provider (a source of one kind, on purpose)",
    ),
    "acta/cli/outbox_quarantine.py": (
        frozenset({"postgresql"}),
        "--source help text naming the accepted source kinds",
    ),
    "acta_testing/containers.py": (
        frozenset({"postgres", "postgresql", "mariadb", "mysql", "sqlserver", "mssql"}),
        "each server provider's throwaway Docker image and the DSN testcontainers gives, in "
        "one table until each provider's TestSupport declares its own (SQL Server has no "
        "provider folder yet)",
    ),
    "acta_testing/plugin.py": (
        frozenset({"postgres", "postgresql", "sqlite", "sqlserver"}),
        "harness engineer's file, follow-up: postgres_dsn/DEFAULT_POSTGRES_DSN as --acta-dsn's "
        "default for every server provider (ProviderEntry.test_target replaces it), "
        "_acta_postgres_schemas, sqlite as the default provider, the announced sqlserver",
    ),
    "acta_testing/schemas.py": (
        frozenset({"postgres", "sqlite"}),
        "public re-exports kept for tests and users (PostgresSchemas, sqlite_copy...)",
    ),
    "acta_testing/faultproxy.py": (
        frozenset({"postgres", "postgresql", "psycopg"}),
        "a TCP fault proxy whose helpers rewrite a PostgreSQL DSN's host and port for the "
        "lossy-network chaos tests (PostgreSQL only, on purpose)",
    ),
    "conformance/test_claim_storage.py": (
        frozenset({"postgres"}),
        "checks PostgreSQL's storage parameters of migration 13; no other dialect has them",
    ),
    "conformance/test_tenants.py": (
        frozenset({"sqlite", "sqlite3"}),
        "the outbox spec's source is an application's own SQLite file whatever the ledger's "
        "provider (a source of one kind, on purpose)",
    ),
    "anvil/checks/plant.py": (
        frozenset({"sqlite", "sqlite3", "psycopg"}),
        "plants raw rows through each driver directly, with SQLite's instant text form "
        "(follow-up: plant through the provider's TestSupport operator)",
    ),
    "noxfile.py": (
        frozenset({"sqlite", "postgres", "mariadb", "sqlserver", "psycopg", "asyncpg"}),
        "the conformance session's provider list (the nox line docs/internals/providers.md "
        "names), the SQLite-only conformance_matrix, the PostgreSQL benchmark sessions' "
        "installs (psycopg[binary], pgqueuer[asyncpg]), and the mariadb extra in TEST_EXTRAS",
    ),
}


def _documentation(tree: ast.AST) -> set[int]:
    """The string constants that are documentation: bare string statements (docstrings and
    the strings documenting an attribute below it)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def words_in(source: str) -> dict[str, list[int]]:
    """Dialect and driver words the code of ``source`` uses, with their line numbers."""
    tree = ast.parse(source)
    docs = _documentation(tree)
    found: dict[str, list[int]] = {}

    def note(text: str, line: int) -> None:
        for match in WORD.finditer(text):
            found.setdefault(match.group(1), []).append(line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                note(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            note(node.module or "", node.lineno)
            for alias in node.names:
                note(alias.name, node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docs:
                note(node.value, node.lineno)
        elif isinstance(node, ast.Name):
            note(node.id, node.lineno)
        elif isinstance(node, ast.Attribute):
            note(node.attr, node.lineno)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            note(node.name, node.lineno)
        elif isinstance(node, ast.arg):
            note(node.arg, node.lineno)
    return found


def _scanned() -> list[str]:
    files: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    relative = (f.relative_to(ROOT).as_posix() for f in files)
    return [r for r in relative if not PROVIDER_FOLDER.match(r)]


FILES = _scanned()


@pytest.mark.parametrize("path", FILES)
def test_no_dialect_is_named_outside_the_provider_folders(path: str) -> None:
    used = words_in((ROOT / path).read_text("utf-8"))
    allowed, _ = ALLOWED.get(path, (frozenset(), ""))
    wrong = {word: lines for word, lines in used.items() if word not in allowed}
    assert not wrong, (
        f"{path} names a dialect or a driver outside acta/provider/<name>/: {wrong} (word: "
        "line numbers). Ask the provider's registry entry or test support instead, or add "
        "the file to ALLOWED with the reason."
    )


def test_each_allowance_is_still_needed() -> None:
    stale = {}
    for path, (allowed, _) in ALLOWED.items():
        used = set(words_in((ROOT / path).read_text("utf-8"))) if path in FILES else set()
        if allowed - used:
            stale[path] = sorted(allowed - used)
    assert not stale, f"allowed words no longer used (narrow or remove the entries): {stale}"


def test_the_scan_finds_what_it_looks_for() -> None:
    found = words_in(
        '"""A docstring about sqlite is prose."""\n'
        "import psycopg\n"
        "from acta.provider.mariadb import ENTRY\n"
        "def f(conn):\n"
        '    """On PostgreSQL, postgres is fine here."""\n'
        '    if dialect == "mssql":\n'
        "        return sqlite3.connect(path)\n"
        '    label = "SQLite"  # prose with capitals is not a dialect identifier\n'
    )
    assert found == {"psycopg": [2], "mariadb": [3], "mssql": [6], "sqlite3": [7]}
