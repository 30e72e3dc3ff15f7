"""Throwaway ledgers for tests: one migrated template per test process, one copy per test.

SQLite: the template file is migrated once per pytest (xdist) worker; each test gets its own
copy, so tests never share a ledger and never pay for migrations twice.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from acta.provider.sqlite import SqliteProvider

_lock = threading.Lock()
_templates: dict[Path, Path] = {}


def sqlite_template(base: Path) -> Path:
    """A migrated, checkpointed SQLite file under ``base`` (created on first call)."""
    with _lock:
        found = _templates.get(base)
        if found is not None:
            return found
        path = base / "acta-template.sqlite3"
        provider = SqliteProvider(path)
        provider.migrate()
        provider.close()  # closing the last connection checkpoints the WAL into the file
        _templates[base] = path
        return path


def sqlite_copy(base: Path, target: Path) -> Path:
    """A fresh ledger file at ``target``, copied from the template."""
    shutil.copyfile(sqlite_template(base), target)
    return target
