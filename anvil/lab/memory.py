"""Worker memory over a lab run: the resident set size of each worker process, sampled.

A long drain is where a leak shows: a worker that keeps something per job (a finished run, a
future, a cached statement) grows with the jobs it has run. The lab samples each live worker's
RSS at every progress line (Linux: ``/proc/<pid>/status``; elsewhere nothing is sampled) and
the record keeps, per worker process, the series and its summary. The first minute is left out
of the growth figure: a worker's pools, caches and imports fill up while it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WARM_UP = 60.0  # seconds of a worker's life not counted in its growth


def rss_kib(pid: int) -> int | None:
    """The resident set size of process ``pid`` in KiB, or None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass
class Memory:
    """RSS samples per worker process number: (seconds since the run began, KiB)."""

    samples: dict[int, list[tuple[float, int]]] = field(default_factory=dict)
    born: dict[int, float] = field(default_factory=dict)

    def sample(self, workers: list[tuple[int, int]], elapsed: float) -> None:
        """Sample every ``(number, pid)`` in ``workers`` at ``elapsed`` seconds."""
        for number, pid in workers:
            kib = rss_kib(pid)
            if kib is None:
                continue
            self.born.setdefault(number, elapsed)
            self.samples.setdefault(number, []).append((round(elapsed, 1), kib))

    def summary(self) -> list[dict[str, Any]]:
        """Per worker: samples, first/max/last KiB, and growth after its first minute."""
        rows = []
        for number, series in sorted(self.samples.items()):
            warm = [kib for at, kib in series if at - self.born[number] >= WARM_UP]
            rows.append(
                {
                    "worker": number,
                    "samples": len(series),
                    "lived_s": round(series[-1][0] - self.born[number], 1),
                    "first_kib": series[0][1],
                    "warm_kib": warm[0] if warm else None,
                    "max_kib": max(kib for _, kib in series),
                    "last_kib": series[-1][1],
                    "growth_after_warm_up_kib": (warm[-1] - warm[0]) if warm else None,
                }
            )
        return rows
