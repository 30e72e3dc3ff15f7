"""acta's pytest plugin and test host: the real runtime, one tick at a time, on a real database.

Fixtures (all prefixed ``acta_``) come from ``acta_testing.plugin``, registered through the
``pytest11`` entry point. Import ``Host``/``AsyncHost`` to build a host by hand, and
``ledger_location`` to read a test's ledger through a connection of your own.

The names below are loaded on first use: pytest imports this package for the plugin in every
test run of a project that has acta installed, and a run that uses no acta fixture should not
pay for importing acta.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acta_testing.host import AsyncHost, Host, HostError, TickOutcome
    from acta_testing.schemas import LedgerLocation, ledger_location

__all__ = ["AsyncHost", "Host", "HostError", "LedgerLocation", "TickOutcome", "ledger_location"]

_HOME = {
    "AsyncHost": "acta_testing.host",
    "Host": "acta_testing.host",
    "HostError": "acta_testing.host",
    "LedgerLocation": "acta_testing.schemas",
    "ledger_location": "acta_testing.schemas",
    "TickOutcome": "acta_testing.host",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'acta_testing' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
