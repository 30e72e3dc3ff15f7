"""acta's pytest plugin and test host: the real runtime, one tick at a time, on a real database.

Fixtures (all prefixed ``acta_``) come from ``acta_testing.plugin``, registered through the
``pytest11`` entry point. Import ``Host``/``AsyncHost`` to build a host by hand, and
``ledger_location`` to read a test's ledger through a connection of your own.
"""

from acta.runtime.executor import TickOutcome
from acta_testing.host import AsyncHost, Host, HostError
from acta_testing.schemas import LedgerLocation, ledger_location

__all__ = ["AsyncHost", "Host", "HostError", "LedgerLocation", "TickOutcome", "ledger_location"]
