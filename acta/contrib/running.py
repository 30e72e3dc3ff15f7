"""Running workers from a framework's command line: until a signal, or what is due now."""

from __future__ import annotations

import asyncio
import signal

from acta.runtime.worker import Worker


async def serve(workers: list[Worker]) -> None:
    """Serve until SIGINT or SIGTERM, then shut each worker down within its grace."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    await asyncio.gather(*(w.serve(stopping) for w in workers))


async def drain(workers: list[Worker]) -> int:
    """Run the jobs that are due now, one at a time, then stop; how many of the user's jobs
    ran (acta's own, such as recovery, run too but are not counted)."""
    ran = 0
    for worker in workers:
        await worker.ensure_registered()
        while True:
            end, name = await worker.run_one()
            if end is None:
                break
            ran += not (name or "").startswith("sys.")
        await worker.shutdown()
    return ran
