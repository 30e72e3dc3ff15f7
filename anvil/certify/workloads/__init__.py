"""The certification's workloads: one module per kind of job, each a ``Workload``.

Adding a kind of job to the certification is adding one module here and naming it in
``ALL``. A workload module builds one ``Workload`` object saying:

- ``register(app, sink)``: declare its job definitions (with handlers) on ``app``; the lab app
  (worker processes) and the producer (the certifier) both call it, so both agree on names
  and policies. Handlers record each body run through ``sink`` (the witness table);
- ``enqueue(ctx)``: enqueue its share of the run and record, in the expected table, the
  terminal status each job must end in (``anvil.certify.ledger``);
- ``during(ctx, elapsed)``: optional, called by the certifier's loop while the run goes on
  (to cancel jobs, send signals);
- ``checks``: the names of the invariant checks (``anvil.checks``) it adds to the
  certification's common ones, and ``params`` for them;
- ``providers``: the dialects it runs on (on the others the run skips it, and its record says
  so, with ``skipped_because``); ``setup`` and ``teardown``, optional, make and remove what it
  needs beside the ledger (dialect, database, ledger schema), before the fleet starts and when
  the ledger is dropped.

A workload's share of the jobs is ``weight`` over the sum of the weights of the run, up to its
``most`` when it has one (what a capped workload leaves goes to the others).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acta import Acta
    from anvil.certify.ledger import Ledger
    from anvil.certify.witnessing import Sink


@dataclass
class Enqueueing:
    """What a workload's ``enqueue`` and ``during`` get: the producer, the ledger, its share
    of the jobs, the seeded random source, and the window the jobs should fall due over."""

    app: Acta
    ledger: Ledger
    count: int
    rng: random.Random
    spread: float
    state: dict[str, Any] = field(default_factory=dict)

    def delay(self, index: int) -> timedelta:
        """When job ``index`` of ``count`` falls due: spread evenly, so work keeps arriving
        for the whole window and faults land on a busy fleet."""
        return timedelta(seconds=self.spread * index / max(self.count, 1))


def _nothing(ctx: Enqueueing, elapsed: float) -> None:
    return None


def _no_setup(dialect: str, database: str, schema: str) -> None:
    return None


@dataclass(frozen=True)
class Workload:
    """One kind of job in the certification (see the module docstring)."""

    name: str
    summary: str
    weight: int
    register: Callable[[Acta, Sink], None]
    enqueue: Callable[[Enqueueing], None]
    during: Callable[[Enqueueing, float], None] = _nothing
    checks: Sequence[str] = ()
    params: dict[str, Any] = field(default_factory=dict)
    most: int | None = None  # at most this many jobs (one-by-one enqueues are slow)
    providers: tuple[str, ...] = ("sqlite", "postgres")
    skipped_because: str = ""  # why it does not run on the other providers
    setup: Callable[[str, str, str], None] = _no_setup
    teardown: Callable[[str, str, str], None] = _no_setup


def all_workloads() -> list[Workload]:
    """Every workload, in the order they are enqueued."""
    from anvil.certify.workloads import (
        batch,
        cancels,
        children,
        durable,
        flaky,
        keyed,
        laned,
        outboxed,
        plain,
        rated,
        scheduled,
        signalled,
        sleeping,
        timeouts,
        txn,
    )

    modules = (
        plain,
        batch,
        flaky,
        timeouts,
        cancels,
        txn,
        laned,
        keyed,
        rated,
        durable,
        sleeping,
        signalled,
        children,
        scheduled,
        outboxed,
    )
    return [module.WORKLOAD for module in modules]


def chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """``items`` cut into runs of ``size`` (batches of enqueues)."""
    return [items[i : i + size] for i in range(0, len(items), size)]
