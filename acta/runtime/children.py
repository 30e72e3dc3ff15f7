"""Child jobs from a handler: spawn them under the parent's lease, wait for them suspended.

A child is an ordinary job with lineage (parent, root, its name under the parent). Spawning is
idempotent by name, so a parent re-entered after a crash finds its children instead of
spawning them twice. Waiting suspends the parent with no lease held; the last child's terminal
transition releases it (``acta.ledger.latch``). A bounded wait that expires cancels only the
children that had not finished.
"""

from __future__ import annotations

from typing import Any

from acta.definition import JobRequest
from acta.errors import ValidationError
from acta.ids import JobRef
from acta.ledger import durable as verbs
from acta.model.codes import JobStatus, WaitKind
from acta.model.rows import WaitRef
from acta.option_types import EnqueueOptions
from acta.outcome import ChildOutcome
from acta.producer import new_job
from acta.provider.verb import Verb
from acta.runtime.port import PortBase, Suspend, check_name, wait_ms


class Children(PortBase):
    """The child-job part of a run's durable port."""

    _children_waits = 0
    _spawned: list[str] | None = None
    """Refs of the children this execution spawned so far (a re-entry spawns them again,
    by name, and gets the same refs): what a wait waits for."""

    async def spawn(
        self, job: Any, inputs: list[Any], names: list[str], options: EnqueueOptions
    ) -> list[JobRef]:
        definition = self.env.registry.resolve(job)
        for name in names:
            check_name(name, "child name")
        if len(set(names)) != len(names):
            raise ValidationError("name", "two children of one call share a name", "unique names")
        claimed = self.run.job
        given: EnqueueOptions = {"correlation_key": claimed.correlation_key, **options}
        requests = [
            JobRequest.build(
                definition,
                value,
                payload_cap=self.env.registry.payload_cap,
                inherit_tenant=True,  # a child without a tenant of its own takes its parent's
                **given,
            )
            for value in inputs
        ]
        clock_now = self.env.clock.now()
        made = JobRef.many(int(clock_now.timestamp() * 1000), len(requests))
        root = claimed.root_id if claimed.root_id is not None else claimed.job_id
        watch = self.env.ledger.telemetry
        trace = None if watch is None else watch.trace_context()  # the parent's execution span
        children = [
            new_job(
                r,
                text,
                clock_now,
                parent_id=claimed.job_id,
                root_id=root,
                child_name=name,
                trace_context=trace,
            )
            for r, (_, text), name in zip(requests, made, names, strict=True)
        ]
        specs = {definition.name: definition.spec()}
        lease, now, namespace = self.lease, self._now(), self.env.namespace
        audited = self._audited()
        fused, channel = self.env.ledger.fused, self.env.ledger.channel

        def make() -> Verb[list[Any] | None]:
            return verbs.spawn(
                lease, namespace, specs, children, audited, now, fused=fused, channel=channel
            )

        written = await self._write(make, "the spawn of children")
        if self.env.ring is not None:
            self.env.ring()
        if self._spawned is None:
            self._spawned = []
        self._spawned.extend(w.job_ref for w in written)
        return [JobRef.parse(w.job_ref) for w in written]

    async def _children(self) -> list[verbs.StoredChild]:
        """The children a wait is about: those this execution spawned so far (all of the
        job's children if it spawned none in this execution), in spawn order."""
        job_id = self.lease.job_id
        children = await self._read(lambda: verbs.children_of(job_id))
        if self._spawned is None:
            return children
        mine = set(self._spawned)
        return [c for c in children if c.job_ref in mine]

    async def wait_children(self, timeout: Any) -> list[ChildOutcome]:
        self._children_waits += 1
        name = f"children-{self._children_waits}"
        ms = None if timeout is None else wait_ms(timeout, "timeout")
        children = await self._children()
        if any(c.status < 100 for c in children):
            state = await self._arm(WaitKind.CHILDREN, name, None, ms, True)
            if not state.expired:
                raise Suspend(
                    WaitRef(int(WaitKind.CHILDREN), name, self.lease.execution),
                    state.due_at,
                    f"children:{name}",
                )
            late = {c.job_ref for c in children if c.status < 100}
            await self._give_up(children)
            children = await self._children()
        else:
            late = set()
        return [self._outcome(c, c.job_ref in late) for c in children]

    async def _give_up(self, children: list[verbs.StoredChild]) -> None:
        """The bounded wait expired: cancel the children that have not finished."""
        late = [c.job_ref for c in children if c.status < 100]
        lease, namespace, now = self.lease, self.env.namespace, self._now()
        await self._write(
            lambda: verbs.give_up_on(lease, late, namespace, now), "the cancel of late children"
        )

    def _outcome(self, child: verbs.StoredChild, late: bool) -> ChildOutcome:
        definition = self.env.registry.get(child.name)
        value: Any = None
        if child.value is not None:
            tp = (
                Any
                if definition is None or definition.result_type is None
                else definition.result_type
            )
            value = self._decode(child.value, tp, f"result of {child.job_ref}")
        return ChildOutcome(
            ref=JobRef.parse(child.job_ref),
            name=child.child_name,
            job=child.name,
            status=JobStatus(child.status).label,
            result=value,
            timed_out=late,
        )
