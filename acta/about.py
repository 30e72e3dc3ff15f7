"""What acta is called where it is installed from, and which version this is.

The import name is ``acta``; the distribution on the package index is ``acta-jobs`` (the name
``acta`` there belongs to an unrelated project). Every install hint in messages and docs is made
from ``DISTRIBUTION`` here, and the version is read from here by the build (pyproject.toml's
dynamic version), by ``acta --version`` and by the telemetry meter. This module imports nothing,
so any layer may use it.
"""

from __future__ import annotations

__version__ = "0.1.0"

DISTRIBUTION = "acta-jobs"
"""The name to give pip: ``pip install acta-jobs``."""


def install_hint(extra: str | None = None) -> str:
    """The pip command that brings acta, or one of its extras: ``pip install 'acta-jobs[x]'``."""
    if extra is None:
        return f"pip install {DISTRIBUTION}"
    return f"pip install '{DISTRIBUTION}[{extra}]'"
