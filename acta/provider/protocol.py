"""The provider seam: what a database backend must offer the ledger.

A provider owns connections, transactions, the dialect's statements and its migrations. It runs
verbs (acta.provider.verb) whole inside one transaction, retrying the whole verb on transient
failures (busy, serialization, deadlock, dropped connection). It holds no policy: what a retry
means or which events to write was decided before the verb was built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from acta.provider.verb import Verb

if TYPE_CHECKING:
    from acta.bell import Bell
    from acta.clock import Clock

T = TypeVar("T")

VerbFactory = Callable[[], Verb[T]]

# Statements only server dialects define: whole batches in one round trip ("fused"; the fused
# enqueue also rings the NOTIFY bell when the provider has the notify capability). SQLite runs
# in-process, where a round trip costs nothing, and takes the portable statements instead;
# every other statement exists in every dialect.
SERVER_STATEMENTS = frozenset(
    {
        "fused_claim",
        "fused_start",
        "fused_settle",
        "fused_enqueue",
        "fused_enqueue_one",
        "jobs_by_ref_or_dedup",
        "lanes_lock",
        "fused_promote",
        "ring",
    }
)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a provider offers beyond the portable statements."""

    fused: bool = False
    """The fused server statements (SERVER_STATEMENTS) exist: whole batches in one round trip."""
    notify: bool = False
    """``bell()`` returns a bell (LISTEN/NOTIFY) that rings when another process enqueues."""


class Provider(Protocol):
    """A database backend for the ledger."""

    dialect: str
    schema: str
    capabilities: Capabilities
    channel: str
    """The notification channel of this ledger (meaningful when ``capabilities.notify``)."""

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

    def bell(self, namespace: str, clock: Clock) -> Bell | None:
        """A bell that rings when another process enqueues in ``namespace``, if the database
        has one (PostgreSQL LISTEN/NOTIFY); None means workers rely on polling."""
        ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...
