"""Parents and children: each parent spawns three children and waits for them to finish.

A parent's first run spawns its children (named, so a re-entry finds them instead of
spawning them again) and suspends on them; the last child to finish releases it, and its
next run collects their outcomes and succeeds. Children do a little work and succeed. Check
(``children_settled``): no child spawned twice, every parent has its three, a parent
succeeded only after all of them succeeded, and no latch or open-children count is left.
"""

from __future__ import annotations

import time

from acta import Acta, SyncJobContext
from acta.model.codes import JobStatus
from anvil.certify.witnessing import Sink
from anvil.certify.workloads import Enqueueing, Workload, chunks

PARENT = "certify.parent"
CHILD = "certify.child"
CHILDREN = 3


class ChildFailed(Exception):
    """A child ended otherwise than succeeded (children here never fail: a finding)."""


def register(app: Acta, sink: Sink) -> None:
    @app.job(CHILD, input=int, max_attempts=100)
    def child(n: int, ctx: SyncJobContext) -> int:
        sink.run(ctx)
        time.sleep(0.005)
        return n

    @app.job(PARENT, input=int, max_attempts=100, timeout="60s")
    def parent(n: int, ctx: SyncJobContext) -> int:
        sink.run(ctx)
        ctx.spawn_many(CHILD, list(range(CHILDREN)), group="child")
        outcomes = ctx.wait_children()
        failed = [f"{o.ref} {o.status}" for o in outcomes if not o.succeeded]
        if failed:
            raise ChildFailed(f"children did not succeed: {', '.join(failed)}")
        return len(outcomes)


def enqueue(ctx: Enqueueing) -> None:
    requests = [ctx.app.request(PARENT, i, delay=ctx.delay(i)) for i in range(ctx.count)]
    for part in chunks(requests, 100):
        ctx.ledger.expect(WORKLOAD.name, ctx.app.enqueue_batch(part), JobStatus.SUCCEEDED)


WORKLOAD = Workload(
    "children",
    f"a parent spawns {CHILDREN} children and waits for them; must succeed after all of them",
    4,
    register,
    enqueue,
    checks=("children_settled",),
    params={"parent_job": PARENT, "children": CHILDREN},
    most=120,
)
