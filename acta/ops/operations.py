"""``Operations``: the operator surface of an application (``app.ops``), sync and async.

One object for everything an operator does to a running system, used alike by the CLI, the
dashboard and its HTTP API. It reads and writes only through the ``Ledger`` facade, in
one transaction per call. It explains a job itself, and holds the other operator surfaces:
``repairs`` (restart, reschedule, amend, pause, retire, purge), ``schedules``, ``alerts`` and
``settings``, each with the same shape: input checked before the database is touched (a typed
error, nothing written), one transaction, an event naming the verb, and ``ConflictError`` when
a row moved under the verb. (``app.repairs``, ``app.schedules``, ``app.alerts`` and
``app.settings`` are the same objects, reached directly.)
"""

from __future__ import annotations

from collections.abc import Callable

from acta.alerts import Alerts
from acta.errors import JobNotFoundError
from acta.ids import JobRef
from acta.ledger.facade import Ledger
from acta.namespaces import Namespaces
from acta.ops import held, queued, settled, stopped  # noqa: F401 - they fill the verdict table
from acta.ops.evidence import Evidence, gather
from acta.ops.explanation import Explanation
from acta.ops.policy import PolicyOverrides
from acta.ops.verdict import VERDICTS
from acta.registry import Registry
from acta.repair import Repairs
from acta.schedules import Schedules
from acta.settings import Settings
from acta.tenants import Tenants


class Operations:
    """Operator verbs over the ledger ``ledger()`` returns, in ``namespace``."""

    def __init__(
        self, ledger: Callable[[], Ledger], namespace: str, registry: Registry | None = None
    ) -> None:
        self._ledger = ledger
        self.namespace = namespace
        self._registry = registry or Registry()

    @property
    def repairs(self) -> Repairs:
        """Restart, reschedule, amend, pause, resume, retire and purge (docs/guide/repair.md)."""
        return Repairs(self._ledger, self._registry, self.namespace)

    @property
    def policy(self) -> PolicyOverrides:
        """Live policy overrides per job name: read what is in force, set, clear."""
        return PolicyOverrides(self._ledger, self._registry, self.namespace)

    @property
    def schedules(self) -> Schedules:
        """Recurring schedules: list, preview, pause, resume, trigger, override."""
        return Schedules(self._ledger, self.namespace)

    @property
    def alerts(self) -> Alerts:
        """Alerts: list, get, acknowledge, resolve."""
        return Alerts(self._ledger, self.namespace)

    @property
    def settings(self) -> Settings:
        """Durable named settings: read and compare-and-set."""
        return Settings(self._ledger, self.namespace)

    @property
    def tenants(self) -> Tenants:
        """Tenants: register, list, suspend, resume, update tags and metadata."""
        return Tenants(self._ledger)

    @property
    def namespaces(self) -> Namespaces:
        """Namespaces: list, suspend, resume (the repairs' pause), update tags and metadata."""
        return Namespaces(self._ledger, self.repairs, self.namespace)

    def explain(self, ref: JobRef | str) -> Explanation:
        """Why the job is where it is and what happens next, from its rows alone.

        Raises InvalidJobRefError for text that is not a ref, JobNotFoundError for a ref with
        no job in this namespace. Reads only; one transaction.
        """
        key, ledger = str(JobRef.coerce(ref)), self._ledger()
        now = ledger.now()
        found = ledger.run(lambda: gather(key, self.namespace, now), name="explain")
        return VERDICTS.judge(self._found(found, key))

    async def explain_async(self, ref: JobRef | str) -> Explanation:
        """Async twin of ``explain``."""
        key, ledger = str(JobRef.coerce(ref)), self._ledger()
        now = ledger.now()
        found = await ledger.run_async(lambda: gather(key, self.namespace, now), name="explain")
        return VERDICTS.judge(self._found(found, key))

    def _found(self, evidence: Evidence | None, ref: str) -> Evidence:
        if evidence is None:
            raise JobNotFoundError(f"no job {ref} in namespace {self.namespace!r}")
        return evidence
