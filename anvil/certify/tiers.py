"""How big a certification run is: Tier A (every submission, in CI) and Tier B (a release).

Sizes are for a loaded two-core machine: Tier A takes about two minutes per provider (up to
five when other suites load the machine). Tier B's 50,000 jobs fall due over fifteen minutes,
about as fast as four worker processes settle them there while being killed; on a machine
saturated by other suites the fleet falls behind and the run fails its drain (scale it down
with ``--jobs`` and ``--window`` there).
``window`` is the time over which the jobs fall due (and over which faults are planned); the
run then drains whatever is left.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Tier:
    """The size of a run and the faults it plans."""

    name: str
    jobs: int
    workers: int
    executors: int
    heartbeat: float  # seconds; a lease lasts four, a worker is dead after seven silent ones
    window: float  # seconds over which jobs fall due and faults are planned
    kill_every: float
    zombies: int
    restarts: int  # PostgreSQL server restarts
    backends_every: float  # PostgreSQL: terminate worker sessions this often
    locks: int  # SQLite: write-lock holds past busy_timeout
    drain: float  # seconds allowed after the window for the last jobs to finish

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def scaled(self, jobs: int | None = None, window: float | None = None) -> Tier:
        """This tier with another job count or window (for smaller runs, such as tests)."""
        return replace(self, jobs=jobs or self.jobs, window=window or self.window)


TIERS = {
    "A": Tier(
        name="A",
        jobs=1500,
        workers=3,
        executors=4,
        heartbeat=0.5,
        window=30.0,
        kill_every=4.0,
        zombies=1,
        restarts=0,
        backends_every=9.0,
        locks=1,
        # Generous: on a machine loaded by other suites the fleet may settle only ten jobs a
        # second; a run that has not drained fails, so the bound is for a hang, not for speed.
        drain=240.0,
    ),
    "B": Tier(
        name="B",
        jobs=50_000,
        workers=4,
        executors=8,
        heartbeat=0.5,
        window=900.0,
        kill_every=6.0,
        zombies=3,
        restarts=1,
        backends_every=20.0,
        locks=3,
        drain=300.0,
    ),
}
