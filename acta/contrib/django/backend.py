"""``ActaBackend``: Django's ``BaseTaskBackend`` on acta's ledger.

Enqueue writes the job on Django's own connection inside ``atomic()``: in an open block it is
a savepoint of the caller's transaction, so the job commits or rolls back with the rows the
request wrote (``durable=True`` blocks and ``ATOMIC_REQUESTS`` included); outside one it is a
transaction of its own. A task's ``args`` and ``kwargs`` travel as one JSON input together with
the task's module path; ``priority``, ``run_after`` and ``queue_name`` map to acta's priority,
``not_before`` and namespace. Results are read from the ledger (acta.contrib.django.results).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections, connections, transaction
from django.tasks import Task, TaskContext, TaskResult, TaskResultStatus
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued, task_finished, task_started
from django.utils import timezone
from django.utils.json import normalize_json
from django.utils.module_loading import import_string

from acta.app import Acta
from acta.context import JobContext
from acta.contrib.django.ledger import Ledgers, Settings, definition_name
from acta.contrib.django.results import TaskRaised, read_result
from acta.definition import JobDefinition
from acta.errors import JobNotFoundError, ValidationError
from acta.ids import JobRef

# Sync tasks run here, not in the loop's default executor: asyncio.run waits for that one's
# threads when it ends, and a task still running after its run was handed back would hold
# the worker past its grace (acta.contrib.running exits without waiting for these).
_THREADS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="acta-django-task")


class ActaBackend(BaseTaskBackend):
    """``TASKS = {"default": {"BACKEND": "acta.contrib.django.ActaBackend", ...}}``.

    ``OPTIONS``: ``DATABASE`` (the ``DATABASES`` alias holding the ledger, default
    ``"default"``), ``NAMESPACES`` (queue name to acta namespace; a queue not listed uses its
    own name), ``POLICY`` (acta job options every task gets, such as ``max_attempts``),
    ``SCHEMA`` (PostgreSQL schema of the ledger, default ``"acta"``).
    """

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.config = Settings.parse(alias, self.options)
        self.ledgers = Ledgers(self.config)

    # -- producing ------------------------------------------------------------------------

    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        try:
            definition_name(task.module_path)
        except ValueError as exc:
            raise InvalidTask(str(exc)) from exc

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        self.validate_task(task)
        app = self.app_for(task.queue_name)
        definition = self.definition(app, task)
        payload = {"task": task.module_path, "args": list(args), "kwargs": dict(kwargs)}
        options: dict[str, Any] = {"priority": task.priority}
        if task.run_after is not None:
            options["not_before"] = task.run_after
        alias = self.config.database
        # A savepoint inside the caller's block (its transaction otherwise): a refused
        # enqueue leaves the caller's transaction usable and nothing of the job written.
        with transaction.atomic(using=alias):
            connection = connections[alias]
            connection.ensure_connection()
            ref = app.enqueue(definition, payload, connection=connection.connection, **options)
        result = TaskResult(
            task=task,
            id=str(ref),
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        return result

    # -- reading --------------------------------------------------------------------------

    def get_result(self, result_id: str) -> TaskResult:
        try:
            ref = JobRef.coerce(result_id)
        except ValidationError as exc:
            raise TaskResultDoesNotExist(result_id) from exc
        for app in self.ledgers.all(sorted(self.queues)):
            try:
                return read_result(app, ref, self.alias)
            except JobNotFoundError:
                continue
        raise TaskResultDoesNotExist(result_id)

    # -- the ledger and the worker side ---------------------------------------------------

    def app_for(self, queue_name: str) -> Acta:
        """The acta application of a queue's namespace."""
        return self.ledgers.app(self.config.namespace(queue_name))

    def definition(self, app: Acta, task: Task) -> JobDefinition[Any, Any]:
        """The task's definition in ``app``, declared with its runner on first use."""
        name = definition_name(task.module_path)
        found = app.definitions.get(name)
        if found is None:
            found = app.job(name, **self.config.policy)(self._runner(app))
        return found

    def _runner(self, app: Acta) -> Callable[..., Any]:
        backend = self

        # An async acta handler whatever the task is: a sync task runs in a thread of the
        # loop's executor, so at shutdown the run can be handed back at the end of the grace
        # instead of waiting for a thread that cannot be interrupted.
        async def run(payload: dict[str, Any], ctx: JobContext) -> Any:
            return await backend._run(app, payload, ctx)

        return run

    async def _run(self, app: Acta, payload: dict[str, Any], ctx: JobContext) -> Any:
        task: Task = import_string(payload["task"])
        result = await asyncio.to_thread(read_result, app, ctx.job, self.alias)
        task_started.send(type(self), task_result=result)
        args = [TaskContext(task_result=result)] if task.takes_context else []
        args += payload["args"]
        try:
            if inspect.iscoroutinefunction(task.func):
                value = await task.func(*args, **payload["kwargs"])
            else:
                call = functools.partial(_call_sync, task.func, args, payload["kwargs"])
                value = await asyncio.get_running_loop().run_in_executor(_THREADS, call)
            value = normalize_json(value)
        except Exception as exc:
            if ctx.is_last_attempt:
                object.__setattr__(result, "status", TaskResultStatus.FAILED)
                object.__setattr__(result, "finished_at", timezone.now())
                task_finished.send(type(self), task_result=result)
            raise TaskRaised.of(exc) from exc
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(result, "finished_at", timezone.now())
        object.__setattr__(result, "_return_value", value)
        task_finished.send(type(self), task_result=result)
        return value

    def check(self, **kwargs: Any) -> list[Any]:
        from acta.contrib.django.checks import backend_checks

        return backend_checks(self)


def _call_sync(func: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    close_old_connections()  # as around a request: a stale or broken connection is replaced
    try:
        return func(*args, **kwargs)
    finally:
        close_old_connections()
