"""The application the lab runs: one job, and the worker entry point of its processes.

``lab.work`` takes the number of milliseconds it should take (0 for none, the default of a
million-job run: the lab exercises the machinery around handlers, not handlers). It waits with
``asyncio.sleep``, so a slow job holds an executor without holding a thread.

Worker processes run ``python -m anvil.lab.app``, configured by environment variables
(``ACTA_LAB_DATABASE``, ``ACTA_LAB_SCHEMA``, ``ACTA_LAB_EXECUTORS``, ``ACTA_LAB_HEARTBEAT``,
``ACTA_LAB_POLL``, ``ACTA_LAB_PROFILE``). Their log goes to stdout, which the fleet sends to a
file per worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from acta import Acta

JOB = "lab.work"
# A short heartbeat makes a kill visible within seconds: the lease of a killed worker lapses
# after four heartbeats and recovery declares it dead after seven (acta.runtime.settings).
HEARTBEAT = 1.0
POLL = 0.05
EXECUTORS = 16
PROFILE = "buffered"


def build(database: str, schema: str) -> Acta:
    """A lab application on ``database`` (schema ``schema``)."""
    app = Acta(database, schema=schema)

    @app.job(JOB)
    async def work(ms: int) -> None:
        if ms > 0:
            await asyncio.sleep(ms / 1000)

    return app


def worker_env(
    database: str,
    schema: str,
    *,
    executors: int = EXECUTORS,
    heartbeat: float = HEARTBEAT,
    poll: float = POLL,
    profile: str = PROFILE,
) -> dict[str, str]:
    """The environment that configures ``main`` in a child process."""
    return {
        "ACTA_LAB_DATABASE": database,
        "ACTA_LAB_SCHEMA": schema,
        "ACTA_LAB_EXECUTORS": str(executors),
        "ACTA_LAB_HEARTBEAT": repr(heartbeat),
        "ACTA_LAB_POLL": repr(poll),
        "ACTA_LAB_PROFILE": profile,
    }


def main() -> None:
    """Run one worker in the foreground until SIGTERM (then shut down gracefully)."""
    env = os.environ
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(name)s %(message)s")
    app = build(env["ACTA_LAB_DATABASE"], env["ACTA_LAB_SCHEMA"])
    app.run_worker(
        executors=int(env["ACTA_LAB_EXECUTORS"]),
        heartbeat=float(env["ACTA_LAB_HEARTBEAT"]),
        poll=float(env["ACTA_LAB_POLL"]),
        profile=env.get("ACTA_LAB_PROFILE", PROFILE),
        listen=True,
        shutdown_grace=10,
    )


if __name__ == "__main__":
    main()
