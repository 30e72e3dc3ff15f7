"""Forward-only migrations: files, checksums, and the plan of what is pending.

Migration files live in each dialect's ``migrations/`` folder as ``NNNN_name.sql``. Applied
versions are recorded with the file's checksum; an applied file that changed since is an error,
never silently re-run. Providers apply the plan in their own transactions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from acta.errors import SchemaError
from acta.provider.statements import sql_files

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str
    checksum: str


def load(package: str) -> list[Migration]:
    """Every migration of a dialect package, in version order, checked for gaps."""
    out: list[Migration] = []
    for f in sql_files(package, "migrations"):
        m = _FILE.match(f.name)
        if m is None:
            raise SchemaError(f"migration file {f.name!r} is not named NNNN_name.sql")
        text = f.read_text("utf-8").replace("\r\n", "\n")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        out.append(Migration(int(m.group(1)), m.group(2), text, digest))
    for expected, migration in enumerate(out, start=1):
        if migration.version != expected:
            raise SchemaError(f"migration {migration.version} found where {expected} was expected")
    return out


def pending(
    available: list[Migration], applied: Iterable[tuple[int, str]], where: str
) -> list[Migration]:
    """The migrations still to apply, after checking the applied ones are unchanged."""
    by_version = {m.version: m for m in available}
    done: set[int] = set()
    for version, checksum in applied:
        known = by_version.get(version)
        if known is None:
            raise SchemaError(
                f"{where} has migration {version}, newer than this acta knows; upgrade acta"
            )
        if known.checksum != checksum:
            raise SchemaError(
                f"{where}: migration {version} ({known.name}) was changed after it was applied "
                "(checksum mismatch); restore the original file"
            )
        done.add(version)
    return [m for m in available if m.version not in done]


def missing_message(where: str, todo: list[Migration], apply_hint: str) -> str:
    """The error text for a schema that is absent or behind this code."""
    versions = ", ".join(f"{m.version:04d}_{m.name}" for m in todo)
    return (
        f"the acta schema in {where} is missing migrations {versions}. "
        f"Apply them with `{apply_hint}`, or pass apply_migrations=True for local work."
    )
