"""Running workers from a framework's command line: until a signal, or what is due now."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading

from acta.runtime.worker import Worker

log = logging.getLogger("acta.worker")


def serve_until_signal(workers: list[Worker]) -> None:
    """``serve`` in the foreground, then leave the process even if a sync handler's thread is
    still running: its job was handed back at shutdown (a late result is dropped), but Python
    would wait for the thread at exit, past the grace the operator gave."""
    asyncio.run(serve(workers))
    stuck = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if any(t.is_alive() for t in stuck):
        log.warning("%d thread(s) of handlers still running after shutdown; exiting", len(stuck))
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


async def serve(workers: list[Worker]) -> None:
    """Serve until SIGINT or SIGTERM, then shut each worker down within its grace."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    try:
        await asyncio.gather(*(w.serve(stopping) for w in workers))
    finally:
        await _close(workers)


async def drain(workers: list[Worker]) -> int:
    """Run the jobs that are due now, one at a time, then stop; how many of the user's jobs
    ran (acta's own, such as recovery, run too but are not counted)."""
    ran = 0
    try:
        for worker in workers:
            await worker.ensure_registered()
            while True:
                end, name = await worker.run_one()
                if end is None:
                    break
                ran += not (name or "").startswith("sys.")
            await worker.shutdown()
    finally:
        await _close(workers)
    return ran


async def _close(workers: list[Worker]) -> None:
    """Close the ledger connections the workers opened on this loop (the loop ends with the
    command; a server also refuses to drop a database that still has sessions, which
    Django's test runner does). The providers reopen on their next use."""
    providers = {id(w.ledger.provider): w.ledger.provider for w in workers if w.namespace_id}
    for provider in providers.values():
        await provider.aclose()
