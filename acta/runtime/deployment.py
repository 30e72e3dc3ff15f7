"""What a worker is built from: the ledger, the registry, the namespace, and the process bell.

The runtime never sees the application object; ``Acta.deployment()`` hands it this value, and a
test can build one directly from a provider and a registry. The clock is the ledger's: the
instant the runtime reasons with and the ``:now`` its statements bind come from one clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acta.bell import ProcessBell
from acta.clock import Clock
from acta.ledger.facade import Ledger
from acta.outbox.source import OutboxSource
from acta.registry import Registry


@dataclass(frozen=True, slots=True)
class Deployment:
    """One namespace of one ledger, and the definitions a worker there can run."""

    ledger: Ledger
    registry: Registry
    namespace: str = "default"
    bell: ProcessBell = field(default_factory=ProcessBell)
    """Rung by this process's producers after they commit an enqueue."""
    outbox: OutboxSource | None = None
    """Where this deployment's workers relay staged outbox rows from (``sys.outbox``)."""
    contract_drift: str = "warn"
    """What a worker does when its build's job shapes differ from the recorded ones: ``warn``
    (log it, record the new shape, write a contract-changed event), ``refuse`` (do not
    start), or ``off`` (do not compare)."""

    @property
    def clock(self) -> Clock:
        return self.ledger.clock
