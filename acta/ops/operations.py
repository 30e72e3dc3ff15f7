"""``Operations``: the operator surface of an application (``app.ops``), sync and async.

One object for everything an operator does to a running system, used by the CLI now and by
the dashboard and HTTP API later. It reads and writes only through the ``Ledger`` facade, in
one transaction per call. Today it explains; the repair verbs, alerts and settings join it
with the same shape: input checked before the database is touched (a typed error, nothing
written), one transaction, an event naming the verb, and ``ConflictError`` when a row moved
under the verb.
"""

from __future__ import annotations

from collections.abc import Callable

from acta.errors import JobNotFoundError
from acta.ids import JobRef
from acta.ledger.facade import Ledger
from acta.ops import held, queued, settled  # noqa: F401 - they fill the verdict table
from acta.ops.evidence import Evidence, gather
from acta.ops.explanation import Explanation
from acta.ops.verdict import VERDICTS


class Operations:
    """Operator verbs over the ledger ``ledger()`` returns, in ``namespace``."""

    def __init__(self, ledger: Callable[[], Ledger], namespace: str) -> None:
        self._ledger = ledger
        self.namespace = namespace

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
