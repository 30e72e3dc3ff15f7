"""acta in a Flask application: ``ActaFlask`` for application factories.

``ext = ActaFlask(jobs, db=db)`` at import, ``ext.init_app(app)`` in the factory. Then:

- every handler of ``jobs`` runs inside ``app.app_context()`` (``current_app``, ``db.session``
  and the app's config work in handlers as in a view);
- ``flask acta worker`` runs a worker (``--batch``: what is due now, then exit);
- ``ext.enqueue(job, input, ...)`` enqueues on ``db.session`` (Flask-SQLAlchemy), so the job
  commits or rolls back with the rows of the request; without ``db`` it enqueues on its own.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any, Unpack

import click
from flask import Flask, current_app
from flask.cli import with_appcontext

from acta.app import Acta
from acta.contrib.running import drain, serve_until_signal
from acta.ids import JobRef
from acta.options import EnqueueOptions
from acta.registry import JobLike

_WRAPPED = "__acta_flask_app__"


class ActaFlask:
    """The Flask extension; ``app.extensions["acta"]`` is this object once initialised."""

    def __init__(self, jobs: Acta, app: Flask | None = None, *, db: Any = None) -> None:
        self.jobs = jobs
        self.db = db
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Register the extension and ``flask acta``, and put the handlers declared so far in
        ``app``'s context (the worker command does it again for those declared later)."""
        app.extensions["acta"] = self
        app.cli.add_command(_command(self))
        self.in_app_context(app)

    def enqueue(
        self, job: JobLike, input: object = None, **options: Unpack[EnqueueOptions]
    ) -> JobRef:
        """Enqueue on Flask-SQLAlchemy's ``db.session`` (the open transaction of this app
        context; the caller commits), or on acta's own transaction without ``db``."""
        # db.session is a scoped_session: calling it gives this context's Session.
        connection = None if self.db is None else self.db.session()
        return self.jobs.enqueue(job, input, connection=connection, **options)

    def in_app_context(self, app: Flask) -> None:
        """Make every handler of ``jobs`` run inside ``app``'s application context."""
        for definition in self.jobs.definitions.values():
            handler = definition.handler
            if definition.system or handler is None:
                continue
            if getattr(handler, _WRAPPED, None) is app:
                continue
            definition.handler = _within(app, getattr(handler, "__wrapped__", handler))

    def worker_app(self) -> Flask:
        app: Flask = current_app._get_current_object()
        return app


def _within(app: Flask, handler: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            with app.app_context():
                return await handler(*args, **kwargs)

        setattr(run_async, _WRAPPED, app)
        return run_async

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> Any:
        with app.app_context():
            return handler(*args, **kwargs)

    setattr(run, _WRAPPED, app)
    return run


def _command(ext: ActaFlask) -> click.Group:
    @click.group("acta", help="acta jobs: run workers.")
    def group() -> None:
        pass

    @group.command("worker", help="Claim and run jobs until SIGINT or SIGTERM.")
    @click.option("--executors", type=int, default=10, show_default=True)
    @click.option("--profile", default="buffered", show_default=True)
    @click.option("--shutdown-grace", type=float, default=30.0, show_default=True)
    @click.option("--batch", is_flag=True, help="Run what is due now, then exit.")
    @with_appcontext  # type: ignore[untyped-decorator]
    def worker(executors: int, profile: str, shutdown_grace: float, batch: bool) -> None:
        ext.in_app_context(ext.worker_app())
        running = ext.jobs.worker(
            executors=executors, profile=profile, shutdown_grace=shutdown_grace
        )
        if batch:
            click.echo(f"ran {asyncio.run(drain([running]))} job(s)")
        else:
            serve_until_signal([running])

    return group
