"""The outbox: job requests staged in the application's own database, in its own transaction.

When the ledger lives in another database than the business data, one transaction cannot hold
both the business write and the enqueue. The outbox closes that gap: ``app.add_to_outbox``
writes the validated, encoded request into the ``acta_outbox`` table of the application's
database, on the caller's connection, so the request commits or rolls back with the business
rows. The ``sys.outbox`` relay, run by workers given an ``OutboxSource``, then moves staged
rows into the ledger (``relay``); rows it cannot admit go to a quarantine (``quarantine``).

``provisioning_sql`` and ``create_outbox`` create the table (``acta outbox schema`` prints the
SQL). This package knows definitions, the ledger's verbs and the caller-transaction helper,
never the runtime.
"""

from typing import Any

from acta.outbox.provisioning import (
    TABLE,
    create_outbox,
    create_outbox_async,
    provisioning_sql,
    table_name,
)
from acta.outbox.quarantine import (
    Quarantine,
    QuarantineDecidedError,
    QuarantinedRow,
    QuarantineEntryNotFoundError,
)
from acta.outbox.source import OutboxSource
from acta.outbox.staging import StagedRow, stage, stage_async


def __getattr__(name: str) -> Any:
    # The providers that can hold an outbox, read from the registry when first asked (not at
    # import: ``import acta`` imports this package).
    if name == "DIALECTS":
        from acta.provider.outbox import dialects

        return dialects()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DIALECTS",
    "TABLE",
    "OutboxSource",
    "Quarantine",
    "QuarantineDecidedError",
    "QuarantineEntryNotFoundError",
    "QuarantinedRow",
    "StagedRow",
    "create_outbox",
    "create_outbox_async",
    "provisioning_sql",
    "stage",
    "stage_async",
    "table_name",
]
