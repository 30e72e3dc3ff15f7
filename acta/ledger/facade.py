"""``Ledger``: the one door through which acta's code runs verbs against a provider.

Everything above the ledger (producer, reader, runtime, operators) holds a ``Ledger``, never a
provider. It owns what would otherwise leak upwards:

* the provider's capabilities (``fused``, ``notify``), so callers never ask the provider;
* the ``:now`` rule: ``now()`` is what every time-dependent statement binds (NULL in
  production, so the database clock judges; the test clock's instant in tests);
* catalog ids learnt from acta's own committed transactions (namespace and definition ids),
  which later enqueues reuse instead of upserting the catalog again;
* observation hooks: each verb and each statement can be reported to ``LedgerHook`` objects
  (spans, metrics, statement timing) without patching a provider;
* the application's ``Telemetry`` (acta.telemetry), or None, for the layers above to record
  on: whatever holds the ledger reaches it, and checks for None first.

Retrying a verb on transient errors stays inside the provider, which alone can tell a
serialization failure from a lost connection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from acta.bell import Bell
from acta.clock import Clock, perf_seconds
from acta.provider.protocol import Provider, VerbFactory
from acta.provider.verb import Op, Verb

if TYPE_CHECKING:
    from acta.telemetry.observer import Telemetry

T = TypeVar("T")


class LedgerHook(Protocol):
    """Told about every verb a ledger runs and, inside it, every statement."""

    def statement(self, op: Op, seconds: float) -> None:
        """One statement ran (``seconds``: from sending it to having its answer)."""
        ...

    def verb(self, name: str, seconds: float, error: BaseException | None) -> None:
        """One verb ended, committed (``error`` None) or not."""
        ...


Catalog = tuple[int, Mapping[str, int]]
"""A namespace id and the ids of its definitions by name."""


class Ledger:
    """Verbs over one provider, judged by one clock. ``provider`` may be a callable that opens
    it on first use (an application connects lazily)."""

    def __init__(self, provider: Provider | Callable[[], Provider], clock: Clock) -> None:
        self._source = provider
        self.clock = clock
        self.hooks: list[LedgerHook] = []
        self.telemetry: Telemetry | None = None
        self._catalogs: dict[str, Catalog] = {}

    @property
    def provider(self) -> Provider:
        source = self._source
        return source() if callable(source) else source

    def with_clock(self, clock: Clock) -> Ledger:
        """The same provider (and hooks) judged by another clock (a worker given its own)."""
        other = Ledger(self._source, clock)
        other.hooks = self.hooks
        other.telemetry = self.telemetry
        other._catalogs = self._catalogs
        return other

    # -- capabilities and time --------------------------------------------------------------

    @property
    def fused(self) -> bool:
        """Whether whole batches run as one statement (the fused server statements exist)."""
        return self.provider.capabilities.fused

    @property
    def notify(self) -> bool:
        """Whether the database rings a bell for other processes (LISTEN/NOTIFY)."""
        return self.provider.capabilities.notify

    @property
    def channel(self) -> str | None:
        """The bell channel the fused enqueue notifies, when the provider has one."""
        return self.provider.channel if self.notify else None

    def now(self) -> datetime | None:
        """The ``:now`` every statement binds: None lets the database clock decide."""
        return self.clock.sql_now()

    def bell(self, namespace: str) -> Bell | None:
        """The database's own bell for ``namespace`` (None: rely on polling)."""
        return self.provider.bell(namespace, self.clock)

    # -- catalog ids ----------------------------------------------------------------------

    def catalog(self, namespace: str) -> Catalog | None:
        """Ids of ``namespace`` learnt from a committed transaction of acta's own, if any."""
        return self._catalogs.get(namespace)

    def learn_catalog(self, namespace: str, catalog: Catalog) -> None:
        """Remember ids a committed transaction of acta's own saw (catalog rows are never
        deleted, so they hold for every later transaction, a caller's included)."""
        self._catalogs[namespace] = (catalog[0], dict(catalog[1]))

    # -- running verbs --------------------------------------------------------------------

    def run(self, make: VerbFactory[T], *, tx: object | None = None, name: str = "verb") -> T:
        """Run one verb in its own transaction, or inside the caller's open one (``tx``)."""
        if not self.hooks:
            return self.provider.run(make, tx=tx)
        started = perf_seconds()
        try:
            result = self.provider.run(self._observed(make), tx=tx)
        except BaseException as exc:
            self._verb_ended(name, started, exc)
            raise
        self._verb_ended(name, started, None)
        return result

    async def run_async(
        self, make: VerbFactory[T], *, tx: object | None = None, name: str = "verb"
    ) -> T:
        """The async twin of ``run`` (the runtime's path)."""
        if not self.hooks:
            return await self.provider.run_async(make, tx=tx)
        started = perf_seconds()
        try:
            result = await self.provider.run_async(self._observed(make), tx=tx)
        except BaseException as exc:
            self._verb_ended(name, started, exc)
            raise
        self._verb_ended(name, started, None)
        return result

    def _verb_ended(self, name: str, started: float, error: BaseException | None) -> None:
        seconds = perf_seconds() - started
        for hook in self.hooks:
            hook.verb(name, seconds, error)

    def _observed(self, make: VerbFactory[T]) -> VerbFactory[T]:
        """``make`` with each statement timed for the hooks (only built when hooks exist)."""
        hooks = self.hooks

        def observed() -> Verb[T]:
            verb = make()
            try:
                op = next(verb)
                while True:
                    sent = perf_seconds()
                    answer: Any = yield op
                    took = perf_seconds() - sent
                    for hook in hooks:
                        hook.statement(op, took)
                    op = verb.send(answer)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

        return observed
