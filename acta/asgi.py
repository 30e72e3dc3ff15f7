"""A lifespan for Starlette and FastAPI that runs an acta worker on the server's own loop.

The web process that enqueues can also execute: ``ActaLifespan`` checks the ledger at startup
(a missing or outdated schema fails startup with the command that fixes it), starts one worker
as a task on the loop the server runs, and puts the application into the lifespan state
(``request.state.acta``). It installs no signal handlers: the server owns them (uvicorn turns
SIGTERM into the lifespan's shutdown), and at shutdown the worker stops claiming, lets runs
finish within its ``shutdown_grace``, hands back the rest and marks itself stopped. A worker
that crashed while the app served is logged when it happens and raised again at shutdown.

Web-only replicas run no worker: ``worker=False``, or ``$ACTA_WORKER=0`` where the argument is
not given. Under acta's pytest plugin no worker starts unless ``worker=True`` says so, so a
``TestClient`` stays deterministic (the test host runs the jobs a test enqueued).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from acta.errors import ConfigurationError, DatabaseUnavailableError

if TYPE_CHECKING:
    from acta.app import Acta
    from acta.runtime.worker import Worker

log = logging.getLogger("acta.asgi")

ENV = "ACTA_WORKER"
"""The environment switch: 0/false/no/off keeps this process web-only; 1/true/yes/on runs one."""
_ON = {"1", "true", "yes", "on"}
_OFF = {"0", "false", "no", "off"}

Lifespan = Callable[[Any], AbstractAsyncContextManager[Mapping[str, Any] | None]]
"""What Starlette's ``lifespan=`` takes: called with the app, entered around its life."""


def worker_wanted(worker: bool | None = None) -> bool:
    """Whether this process runs a worker: ``worker`` when given, else ``$ACTA_WORKER``, else
    yes, except under acta's pytest plugin (the test host runs the jobs there)."""
    if worker is not None:
        return worker
    said = os.environ.get(ENV)
    if said is not None and said.strip() != "":
        value = said.strip().lower()
        if value in _ON:
            return True
        if value in _OFF:
            return False
        raise ConfigurationError(
            f"${ENV}={said!r}: use 1/true/yes/on to run a worker in this process, "
            "or 0/false/no/off for a web-only replica"
        )
    return not _under_test_host()


def _under_test_host() -> bool:
    plugin = sys.modules.get("acta_testing.isolation")
    return plugin is not None and plugin.current() is not None


class ActaLifespan:
    """``FastAPI(lifespan=ActaLifespan(jobs))``: a worker of ``jobs`` for the server's life.

    ``inner``: your own lifespan; it starts before the worker and ends after it, so handlers
    may use what it set up, and its state is merged with ``{"acta": jobs}``. ``worker``: the
    switch (see ``worker_wanted``). Other keywords are worker settings (executors, profile,
    shutdown_grace, heartbeat, ...), checked here rather than at startup.
    """

    def __init__(
        self,
        jobs: Acta,
        *,
        inner: Lifespan | None = None,
        worker: bool | None = None,
        state_key: str = "acta",
        **settings: Any,
    ) -> None:
        from acta.runtime.settings import WorkerSettings

        WorkerSettings.build(**settings)  # a bad setting fails where the app is declared
        self.jobs = jobs
        self.inner = inner
        self.switch = worker
        self.state_key = state_key
        self.settings = settings
        self.worker: Worker | None = None
        """The worker of the current (or last) server life; None when none ran."""

    def __call__(self, asgi_app: Any) -> AbstractAsyncContextManager[dict[str, Any]]:
        return self._life(asgi_app)

    @contextlib.asynccontextmanager
    async def _life(self, asgi_app: Any) -> AsyncIterator[dict[str, Any]]:
        wanted = worker_wanted(self.switch)
        await _check_ledger(self.jobs)
        async with contextlib.AsyncExitStack() as stack:
            state: dict[str, Any] = {}
            if self.inner is not None:
                theirs = await stack.enter_async_context(self.inner(asgi_app))
                state.update(theirs or {})
            state[self.state_key] = self.jobs
            if not wanted:
                self.worker = None
                yield state
                return
            worker = self.worker = self.jobs.worker(**self.settings)
            stopping = asyncio.Event()
            serving = asyncio.create_task(worker.serve(stopping), name="acta-worker")
            serving.add_done_callback(_report_crash)
            try:
                yield state
            finally:
                stopping.set()
                # serve() bounds its own shutdown (grace, then the runs' cancel grace).
                await asyncio.wait({serving})
            if serving.exception() is not None:
                raise serving.exception()  # type: ignore[misc]


def _report_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("acta worker crashed; the web app goes on without it", exc_info=task.exception())


async def _check_ledger(jobs: Acta) -> None:
    """Open the ledger once: a missing or outdated schema fails startup (SchemaError says how
    to migrate); a database that is away only delays the worker, which keeps trying."""
    try:
        await asyncio.to_thread(lambda: jobs.provider)
    except DatabaseUnavailableError as exc:
        log.warning("the ledger is unreachable at startup (%s); the worker keeps trying", exc)


def lifespan(
    jobs: Acta, *, inner: Lifespan | None = None, worker: bool | None = None, **settings: Any
) -> ActaLifespan:
    """Shorthand for ``ActaLifespan(jobs, inner=..., worker=..., **settings)``."""
    return ActaLifespan(jobs, inner=inner, worker=worker, **settings)
