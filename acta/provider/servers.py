"""Which registered providers need a database server for their tests, and whether each can run.

``python -m acta.provider.servers`` prints one JSON object: ``everything``, the provider the
whole suite runs on (the registry's fallback, which needs no server), and ``servers``, one
entry per server provider in registry order with its name, title, the environment variable
naming its test database, and ``unavailable``: why its tests cannot run here ("" when they
can). The noxfile's ``tests`` session runs it inside its environment and then runs the
conformance specs on each server provider, so a provider that adds its registry line (with a
``test_dsn``) is tested without another edit. The answer comes from the provider's own test
support: opening a test session is exactly what the tests would do first.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from acta.provider import registry
from acta.provider.testing import ProviderUnavailable


def unavailable(entry: registry.ProviderEntry, dsn: str | None = None) -> str:
    """Why the tests of ``entry`` cannot run against ``dsn`` (its test database by default),
    or "" when they can."""
    target = entry.test_target(dsn)
    with tempfile.TemporaryDirectory(prefix="acta-probe-") as base:
        try:
            session = entry.support().open_session(target, "probe", Path(base))
        except ProviderUnavailable as exc:
            return str(exc) or type(exc).__name__
        problems = session.finish()
    return "; ".join(problems)


def report() -> dict[str, Any]:
    """What ``main`` prints (see the module docstring)."""
    everything = next(e.name for e in registry.entries() if e.fallback)
    servers = [
        {
            "name": e.name,
            "title": e.title,
            "dsn_env": e.dsn_env,
            "unavailable": unavailable(e),
        }
        for e in registry.entries()
        if e.server
    ]
    return {"everything": everything, "servers": servers}


def main() -> int:
    json.dump(report(), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
