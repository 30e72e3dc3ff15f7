"""The provider seam: what a database backend must offer the ledger.

A provider owns connections, transactions, the dialect's statements and its migrations. It runs
verbs (acta.provider.verb) whole inside one transaction, retrying the whole verb on transient
failures (busy, serialization, deadlock, dropped connection). It holds no policy: what a retry
means or which events to write was decided before the verb was built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from acta.provider.verb import Verb

T = TypeVar("T")

VerbFactory = Callable[[], Verb[T]]


class Provider(Protocol):
    """A database backend for the ledger."""

    dialect: str
    schema: str

    @property
    def where(self) -> str:
        """Where the ledger lives, for messages (no passwords)."""
        ...

    def qualify(self, name: str) -> str:
        """The name users type in SQL for a ledger table or view (``acta.jobs_view``)."""
        ...

    def run(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        """Run one verb in its own transaction, or inside the caller's open transaction."""
        ...

    async def run_async(self, make: VerbFactory[T], *, tx: object | None = None) -> T:
        """The same, for asyncio callers and the runtime."""
        ...

    def migrate(self) -> list[str]:
        """Apply pending migrations; return the names applied."""
        ...

    def check_schema(self) -> None:
        """Raise SchemaError naming the fix when the schema is missing or behind."""
        ...

    def provisioning_sql(self) -> str:
        """The full SQL that creates the schema, for review or manual application."""
        ...

    def dump_schema(self) -> str:
        """The live catalog of the ledger, normalised, to compare with schema.sql."""
        ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...
