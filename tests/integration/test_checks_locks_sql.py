"""The lock check of anvil/checks (``locks_exclusive``), on SQLite and PostgreSQL: it can fail.

Handlers leave a witness row when they enter a ``ctx.lock`` section and another just before
they leave it (anvil/checks/witness.py). A real run through the test host, with a holder
killed inside its section and a zombie stalled in its section past its lease while another
job takes the lock, leaves a ledger on which the check returns nothing: a dead or fenced
holder's section does not count once its lease was taken back. Witness rows written directly,
the way a broken lock would let two live runs in, make it return exactly the overlap planted.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from planting import witness_planter, write_witness

from acta import Acta, LeaseLostError, SyncJobContext
from acta.provider.protocol import Provider
from acta_testing import Host
from anvil.checks import describe
from anvil.checks import witness as witnesses
from anvil.checks.plant import Planter

BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KEY = "account-acme"


@pytest.fixture
def acta_provider(either_dialect: Provider) -> Provider:
    """Each test here runs on both dialects, whatever ``--acta-provider`` says."""
    return either_dialect


@pytest.fixture
def direct(acta_provider: Provider) -> Iterator[Planter]:
    """The test's own connection to the ledger, with the witness table made beside it."""
    with witness_planter(acta_provider, BASE) as found:
        yield found


def _found(direct: Planter) -> list[tuple[str, str, str, str]]:
    return [
        (row["lock_key"], row["earlier_ref"], row["later_ref"], row["problem"])
        for row in direct.check("locks_exclusive")
    ]


def test_a_run_with_a_dead_holder_and_a_zombie_passes(
    acta_app: Acta, acta_host: Host, direct: Planter
) -> None:
    location = direct.location
    doomed = acta_host.add_worker()
    zombie = acta_host.add_worker()

    @acta_app.job("settle-account", max_attempts=5)
    def settle(label: str, ctx: SyncJobContext) -> None:
        ref, run = str(ctx.job), ctx.execution
        with ctx.lock(KEY, timeout=0):
            write_witness(location, ref, f"lock-enter:{KEY}", run)
            try:
                if label == "dies" and run == 1:
                    acta_host.kill(doomed)  # dies inside: no exit row, ever
                    raise LeaseLostError("the process is gone")
                if label == "stalls" and run == 1:
                    acta_host.pause(zombie)  # its lease lapses; recovery takes it back
                    acta_host.advance(zombie.lease + acta_host.worker.heartbeat)
                    acta_host.tick()  # recovery, then this job again, which takes the lock
                    acta_host.resume(zombie)
            finally:
                if not (label == "dies" and run == 1):
                    write_witness(location, ref, f"lock-exit:{KEY}", run)

    settle.enqueue("plain")
    assert acta_host.tick() == "completed"
    settle.enqueue("dies")
    assert acta_host.tick(doomed) == "killed"
    acta_host.advance(doomed.lease + acta_host.worker.heartbeat)
    assert acta_host.tick() == "completed"  # recovery, then execution 2 takes the lock
    settle.enqueue("stalls")
    acta_host.tick(zombie)  # the zombie's release is refused: it lost its lease
    settle.enqueue("plain")
    assert acta_host.tick() == "completed"

    rows = witnesses.rows(direct.conn, direct.dialect, location.schema)
    assert sum(1 for r in rows if r[1].startswith("lock-enter:")) == 6
    assert _found(direct) == [], describe("locks_exclusive", direct.check("locks_exclusive"))


def test_two_live_runs_inside_one_lock_are_caught(direct: Planter) -> None:
    location = direct.location
    write_witness(location, "job-a", f"lock-enter:{KEY}", 1)
    write_witness(location, "job-b", f"lock-enter:{KEY}", 1)  # a is still inside
    write_witness(location, "job-a", f"lock-exit:{KEY}", 1)
    write_witness(location, "job-b", f"lock-exit:{KEY}", 1)
    write_witness(location, "job-c", "lock-enter:other-key", 1)  # another key: no conflict
    write_witness(location, "job-d", f"lock-enter:{KEY}", 1)  # after both left: fine
    write_witness(location, "job-e", f"lock-enter:{KEY}", 2)  # d never left, and kept its lease
    assert _found(direct) == [
        (KEY, "job-a", "job-b", "entered before the holder left"),
        (KEY, "job-d", "job-e", "entered while a live holder never left"),
    ]
