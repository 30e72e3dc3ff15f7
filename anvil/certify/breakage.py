"""A deliberately broken worker, for the test that proves the certification's checks can fail.

``break_fencing()`` (called by the lab app when ``ACTA_ANVIL_BREAK_FENCING=1``, never by acta)
rewrites, in this process only, the SQL statements acta loads, before any provider is built:
the fence predicates (``lease_epoch = :epoch``, the lease-owner match, and the status half of
the two guard reads) become always true, so a worker that lost its lease can still settle the
job it was running, and write its steps, even after another worker finished it. A zombie woken after
recovery gave its job to another worker then writes over the new owner's run, which the
certification's checks must report (``certify_fenced_writes``, ``certify_settled_twice``).

On PostgreSQL the fused start and settle run inside ledger functions that the migrations
create, so their fences stay. A zombie's settle is still not stopped: rows whose guard fails in
``settle_batch`` go through the portable ``transition_guard`` and ``transition`` statements,
which this module does unfence. chaos/test_certify.py proves it on both providers.
"""

from __future__ import annotations

import re

import acta.provider.statements as statements

# "AND r.lease_epoch = :epoch" and "AND lease_owner = :worker_id" in guards (WHERE ... AND),
# and the PostgreSQL guard's "OR r.lease_owner = :owner::bigint"; a SET clause is left alone.
_FENCE = re.compile(
    r"(?P<lead>\b(?:WHERE|AND|OR)\s+)(?:\w+\.)?(?:lease_epoch|lease_owner)\s*=\s*:\w+(?:::\w+)?"
)


# The status half of the two guard reads (a handler's durable write, a settle): "AND r.status
# = 21" and "AND r.status IN (... :expect ...)". Without it a zombie's write lands even on a
# job that another worker already finished.
_STATUS = re.compile(r"AND r\.status (?:= \d+|IN \(.*?:expect\b.*?\)\))", re.DOTALL)
_GUARDS = ("lease_guard", "transition_guard")


def _unfenced(name: str, text: str) -> str:
    text = _FENCE.sub(lambda m: f"{m.group('lead')}1 = 1", text)
    return _STATUS.sub("AND 1 = 1", text) if name in _GUARDS else text


def break_fencing() -> None:
    """Make every later-built provider of this process run its statements without fences,
    and its runs ignore the news that their lease was lost."""
    original = statements.parse_blocks

    def parse_blocks(text: str, source: str) -> dict[str, str]:
        return {name: _unfenced(name, body) for name, body in original(text, source).items()}

    statements.parse_blocks = parse_blocks

    # The in-process half of the fence: a heartbeat that finds a lease gone stops the run, so
    # it writes nothing more. The broken worker carries on and settles as if nothing happened.
    from acta.runtime.run import Run, Stop

    stop = Run.stop

    def carry_on(self: Run, reason: Stop) -> None:
        if reason is not Stop.LEASE_LOST:
            stop(self, reason)

    Run.stop = carry_on  # type: ignore[method-assign]
