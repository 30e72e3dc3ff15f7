"""A hypothesis state machine over the test host: lanes, keys, limits and rates under faults.

Each example builds its own application, manual clock, test host with three peer workers and a
fresh ledger (on the provider chosen with ``--acta-provider``), then takes random steps: enqueue
(alone or in a batch) to four definitions (plain, ``concurrency_limit=2``, ``rate_limit="3/s"``,
laned by definition) with random lanes, keys, priorities and handler behaviour; tick a random
peer; advance the clock (sometimes past a lease, so recovery runs); cancel a job; drain. A
handler can fail (its input says for how many executions), kill its own worker mid-run, or tick
another peer from inside itself, so that two runs overlap and the gates have something to
refuse. After every step ``gates_model.LedgerModel`` checks the ledger; at the end everything is
drained and must have finished, with every lane empty and no slot held.

CI runs a fixed set of examples (``derandomize=True``); ``ACTA_FUZZ_EXAMPLES=N`` switches to
random seeds and N examples (docs/internals/gates-fuzzing.md). Things the public host lacks are
built from public pieces here: the per-example ledger comes from the provider's ``TestLedgers``
(the plugin's ``_acta_ledgers`` fixture), and which worker a handler runs on is tracked by the
machine around each tick (``ticking``), as nothing in ``JobContext`` says so.
"""

from __future__ import annotations

import itertools
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from acta import Acta, JobContext, JobRef
from acta.clock import ManualClock
from acta.provider import registry
from acta.runtime.worker import Worker
from acta_testing import Host, ledger_location
from acta_testing.plugin import START, chosen_provider

from .gates_model import DEFINITIONS, JobModel, LedgerModel

if TYPE_CHECKING:
    from acta.provider.testing import TestLedgers

PEERS = 3
HEARTBEAT = 1
"""Seconds; a lease is four heartbeats, so a killed worker's jobs come back within a few
clock steps rather than only after the "past a lease" step."""
MAX_ATTEMPTS = 2
ALWAYS = 9
"""A ``fail`` count above MAX_ATTEMPTS: the job fails on every execution, so finally."""
STEPS = [0.05, 0.2, 0.5, 1.0, 3.0, "past a lease"]

# CI: a fixed set of examples (derandomize seeds from the test itself), reported without
# shrinking, which can take minutes at a fifth of a second per example and would hit the
# suite's timeout; the printed steps replay exactly. ACTA_FUZZ_EXAMPLES=N: random seeds, N
# examples, shrunk. ACTA_FUZZ_SHRINK=1 shrinks in CI mode too (to minimise a CI failure).
_FUZZ = int(os.environ.get("ACTA_FUZZ_EXAMPLES") or 0)
_SHRINK = bool(_FUZZ) or os.environ.get("ACTA_FUZZ_SHRINK") == "1"
SERVER_EXAMPLES = 12
SETTINGS = settings(
    max_examples=_FUZZ or 60,
    derandomize=not _FUZZ,
    stateful_step_count=int(os.environ.get("ACTA_FUZZ_STEPS") or 50),
    deadline=None,
    database=None,
    phases=[p for p in Phase if p is not Phase.shrink or _SHRINK],
    suppress_health_check=[HealthCheck.too_slow],
)

job_args = st.fixed_dictionaries(
    {
        # The gated definitions twice as often: they are what the machine is about.
        "definition": st.sampled_from(["limited", "metered"] * 3 + ["plain", "laned"] * 2),
        "lane": st.sampled_from([None, None, "L1", "L2"]),
        "key": st.sampled_from([None, "k1", "k2"]),
        "priority": st.integers(-3, 3),
        "fail": st.sampled_from([0, 1, ALWAYS]),
        "kill": st.sampled_from([0, 0, 0, 1]),
        "nest": st.integers(-1, PEERS - 1),
    }
)
# One step is one action. Hypothesis would switch whole rules off per example (swarm testing),
# which with a few dozen examples leaves many that only enqueue or only tick; one rule drawing a
# weighted kind keeps every example a mix. Ticks come most often; a drain (run_until_idle,
# which jumps the clock to whatever is due and empties everything) now and then.
KINDS = ["tick"] * 8 + ["enqueue"] * 4 + ["advance"] * 5 + ["batch"] * 2 + ["cancel", "drain"]
ARGUMENTS: dict[str, st.SearchStrategy[Any]] = {
    "tick": st.integers(0, PEERS - 1),
    "enqueue": job_args,
    "advance": st.sampled_from(STEPS),
    "batch": st.lists(job_args, min_size=2, max_size=4),
    "cancel": st.integers(1, 4),
    "drain": st.integers(0, PEERS - 1),
}
"""What each kind takes: a peer's index, a job, a clock step, a batch, how far back the job to
cancel was enqueued (the latest are the likeliest to be unfinished), a peer."""
actions = st.sampled_from(KINDS).flatmap(
    lambda kind: ARGUMENTS[kind].map(lambda argument: (kind, argument))
)


class NestedTickError(AssertionError):
    """A tick made from inside a handler raised: the handler must not swallow it."""


class GatesMachine(RuleBasedStateMachine):
    """Random producers, peers, faults and clock moves over one ledger; see the docstring."""

    def __init__(self, ledgers: TestLedgers, folder: Path) -> None:
        super().__init__()
        self._exit = ExitStack()
        provider = self._exit.enter_context(ledgers.ledger(folder))
        location = ledger_location(provider)
        operator = ledgers.operator(location)
        self._exit.callback(operator.close)
        self.app = Acta()
        for definition in DEFINITIONS.values():
            self.app.job(
                definition.name, max_attempts=MAX_ATTEMPTS, backoff="500ms", **definition.policy()
            )(self._handler())
        self.host = Host(self.app, provider, ManualClock(START), heartbeat=HEARTBEAT)
        self._exit.callback(self.host.close)
        self.peers: list[Worker] = [self.host.worker]
        self.peers += [self.host.add_worker() for _ in range(PEERS - 1)]
        self.model = LedgerModel(operator, location)
        self.ticking: list[Worker] = []
        """The workers of the ticks in flight, innermost last (a handler runs on the last)."""
        self.nested_errors: list[BaseException] = []
        self.nested: list[str] = []
        """Outcomes of the ticks made inside handlers (hypothesis records events only on the
        test's own thread)."""
        self.draining = False
        self.count = 0

    def _handler(self) -> Any:
        def run(spec: dict[str, int], ctx: JobContext) -> None:
            """Behave as ``spec`` says: on the first execution tick another peer from inside
            (``nest``: which one) and kill the own worker (``kill``); fail on the first
            ``fail`` executions. The final drain neither kills nor nests."""
            first = ctx.execution == 1 and not self.draining and bool(self.ticking)
            if first and spec["nest"] >= 0 and len(self.ticking) < PEERS:
                other = self._other_peer(spec["nest"])
                if other is not None:
                    try:
                        self.nested.append(self._tick(other))
                    except BaseException as exc:  # reported by the outer tick, not swallowed
                        self.nested_errors.append(exc)
            if first and spec["kill"]:
                self.host.kill(self.ticking[-1])
                return
            if ctx.execution <= spec["fail"]:
                raise RuntimeError(f"job {spec['n']} fails execution {ctx.execution} on purpose")

        return run

    def _other_peer(self, index: int) -> Worker | None:
        for offset in range(PEERS):
            worker = self.peers[(index + offset) % PEERS]
            if worker not in self.ticking and not worker.killed:
                return worker
        return None

    def _tick(self, worker: Worker) -> str:
        self.ticking.append(worker)
        try:
            outcome = str(self.host.tick(worker))
        finally:
            self.ticking.pop()
        return outcome

    def _restart_killed(self) -> None:
        """A killed worker's process is gone; a new incarnation takes its place."""
        for index, worker in enumerate(self.peers):
            if worker.killed:
                self.peers[index] = self.host.add_worker()

    def _new_job(
        self, args: dict[str, Any]
    ) -> tuple[str, dict[str, int], dict[str, Any], JobModel]:
        definition = DEFINITIONS[args["definition"]]
        self.count += 1
        spec = {"n": self.count, "fail": args["fail"], "kill": args["kill"], "nest": args["nest"]}
        options = {"priority": args["priority"]}
        if args["lane"] is not None:
            options["lane"] = args["lane"]
        if args["key"] is not None:
            options["concurrency_key"] = args["key"]
        lane = args["lane"] or definition.lane
        return definition.name, spec, options, JobModel("", definition, lane, args["key"])

    def _remember(self, refs: list[JobRef], models: list[JobModel]) -> None:
        for ref, model in zip(refs, models, strict=True):
            self.model.add(JobModel(str(ref), model.definition, model.lane, model.key))

    # -- steps ----------------------------------------------------------------------------

    @rule(action=actions)
    def step(self, action: tuple[str, Any]) -> None:
        kind, argument = action
        if kind == "tick":
            self.tick(self.peers[argument])
        elif kind == "enqueue":
            self.enqueue([argument])
        elif kind == "batch":
            self.enqueue(argument)
        elif kind == "advance":
            worker = self.host.worker
            past_lease = worker.lease + worker.heartbeat
            self.host.advance(past_lease if isinstance(argument, str) else argument)
        elif kind == "cancel":
            refs = list(self.model.jobs)
            if len(refs) >= argument:
                event(f"cancel: {self.app.cancel(refs[-argument]).label}")
        else:
            self._drain(self.peers[argument])

    def enqueue(self, batch: list[dict[str, Any]]) -> None:
        """One job with enqueue(), or several in one transaction with enqueue_batch() (a lane
        takes them in list order)."""
        made = [self._new_job(args) for args in batch]
        if len(made) == 1:
            [(name, spec, options, model)] = made
            self._remember([self.app.enqueue(name, spec, **options)], [model])
            return
        requests = [self.app.request(name, spec, **options) for name, spec, options, _ in made]
        self._remember(self.app.enqueue_batch(requests), [model for *_, model in made])

    def tick(self, worker: Worker) -> None:
        try:
            event(f"tick: {self._tick(worker)}")
        finally:
            self._restart_killed()
        for outcome in self.nested:
            event(f"tick inside a handler: {outcome}")
        self.nested.clear()
        if self.nested_errors:
            raise NestedTickError("a tick inside a handler failed") from self.nested_errors[0]

    def _drain(self, worker: Worker) -> None:
        self.draining = True
        try:
            self.host.run_until_idle(worker)
        finally:
            self.draining = False

    # -- checks ---------------------------------------------------------------------------

    @invariant()
    def ledger_obeys_the_gates(self) -> None:
        self.model.replay()
        self.model.check_rows()

    def teardown(self) -> None:
        try:
            if sys.exc_info()[0] is None:  # a step failed: report that, not the drain
                self._drain(self.peers[0])
                self.model.replay()
                self.model.check_drained(self.model.check_rows())
        finally:
            self._exit.close()


def test_gates_hold_under_random_steps(
    request: pytest.FixtureRequest, _acta_ledgers: TestLedgers, tmp_path: Path
) -> None:
    examples = itertools.count()
    chosen = SETTINGS
    if not _FUZZ and registry.entry(chosen_provider(request.config)).support().server:
        # A server ledger costs about six times SQLite's per step: fewer examples keep the
        # run near SQLite's time (the machine runs in CI on SQLite; this is for local runs).
        chosen = settings(SETTINGS, max_examples=SERVER_EXAMPLES)

    def machine() -> GatesMachine:
        folder = tmp_path / f"example-{next(examples)}"
        folder.mkdir()
        return GatesMachine(_acta_ledgers, folder)

    # Hypothesis takes any factory here (its annotation says a class): each example needs the
    # session's ledgers and a folder of its own, which the class alone cannot be given.
    run_state_machine_as_test(machine, settings=chosen)  # type: ignore[arg-type]
