"""``python -m acta.provider.servers``: what the noxfile's ``tests`` session asks before it runs
the conformance specs on each server provider of the registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from acta.provider import registry, servers


def test_every_server_provider_is_listed_with_why_it_cannot_run() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "acta.provider.servers"], capture_output=True, text=True, check=True
    )
    found = json.loads(out.stdout)
    assert found["everything"] == next(e.name for e in registry.entries() if e.fallback)
    listed = [s["name"] for s in found["servers"]]
    assert listed == [e.name for e in registry.entries() if e.server]
    for server in found["servers"]:
        entry = registry.entry(server["name"])
        assert (server["title"], server["dsn_env"]) == (entry.title, entry.dsn_env)
        assert isinstance(server["unavailable"], str)
        if os.environ.get("CI", "").lower() == "true":
            assert server["unavailable"] == "", server  # CI runs every provider


@pytest.mark.parametrize("entry", [e for e in registry.entries() if e.server], ids=lambda e: e.name)
def test_an_unreachable_server_says_why(entry: registry.ProviderEntry) -> None:
    # A port nothing listens on, on this machine: the provider's own test support says so.
    nowhere = entry.test_target().replace(
        entry.test_target().rsplit("@", 1)[-1].split("/", 1)[0], "127.0.0.1:9"
    )
    why = servers.unavailable(entry, nowhere)
    assert why and "127.0.0.1" in why
