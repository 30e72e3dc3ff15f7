"""The outbox: job requests staged in the application's own database, in its own transaction.

When the ledger lives in another database than the business data, one transaction cannot hold
both the business write and the enqueue. The outbox closes that gap: ``app.add_to_outbox``
writes the validated, encoded request into the ``acta_outbox`` table of the application's
database, on the caller's connection, so the request commits or rolls back with the business
rows. A relay then moves staged rows into the ledger; the relay is not built yet, so for now
staged rows stay where they are.

``provisioning_sql`` and ``create_outbox`` create the table (``acta outbox schema`` prints the
SQL). This package knows definitions and the caller-transaction helper, never the runtime.
"""

from acta.outbox.provisioning import (
    DIALECTS,
    TABLE,
    create_outbox,
    create_outbox_async,
    provisioning_sql,
    table_name,
)
from acta.outbox.staging import StagedRow, stage, stage_async

__all__ = [
    "DIALECTS",
    "TABLE",
    "StagedRow",
    "create_outbox",
    "create_outbox_async",
    "provisioning_sql",
    "stage",
    "stage_async",
    "table_name",
]
