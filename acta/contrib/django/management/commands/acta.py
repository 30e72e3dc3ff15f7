"""``manage.py acta worker``: run the tasks of Django's acta backend (and ``manage.py acta jobs
...``: acta's ``acta jobs`` commands on the backend's ledger).

It imports each installed app's ``tasks`` module, declares every task it finds there that uses
the chosen backend, and runs one acta worker per namespace the chosen queues map to, until
SIGINT or SIGTERM (then it stops claiming, lets runs finish within ``--shutdown-grace`` and
hands the rest back). ``--batch`` runs the jobs that are due now, one at a time, and exits.
Django's connections are closed around each task, as around a request.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.tasks import Task, task_backends
from django.utils.module_loading import autodiscover_modules

from acta.contrib.django.backend import ActaBackend
from acta.contrib.django.ledger import database_url
from acta.contrib.running import drain, serve_until_signal
from acta.errors import ActaError


class Command(BaseCommand):
    help = "Run acta workers for Django's tasks (`acta worker`)."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        worker = verbs.add_parser("worker", help="claim and run tasks")
        worker.add_argument("--backend", default="default", help="the TASKS alias")
        worker.add_argument(
            "--queue", action="append", dest="queues", help="a queue to run (repeatable)"
        )
        worker.add_argument("--executors", type=int, default=10)
        worker.add_argument("--profile", default="buffered", help="buffered, direct or bulk")
        worker.add_argument("--shutdown-grace", type=float, default=30.0)
        worker.add_argument("--heartbeat", type=float, default=None)
        worker.add_argument("--poll", type=float, default=None)
        worker.add_argument("--batch", action="store_true", help="run what is due now, then exit")
        jobs = verbs.add_parser(
            "jobs", help="acta's `acta jobs ...` on this backend's ledger (list, show, ...)"
        )
        jobs.add_argument("--backend", default="default", help="the TASKS alias")
        jobs.add_argument("rest", nargs=argparse.REMAINDER, help="`acta jobs` arguments")

    def handle(self, *args: Any, **options: Any) -> None:
        backend = task_backends[options["backend"]]
        if not isinstance(backend, ActaBackend):
            raise CommandError(f"TASKS[{options['backend']!r}] is not acta's backend")
        if options["verb"] == "jobs":
            self.jobs(backend, options["rest"])
            return
        queues = options["queues"] or sorted(backend.queues)
        unknown = sorted(set(queues) - backend.queues)
        if unknown:
            raise CommandError(
                f"unknown queue(s) {', '.join(unknown)}; this backend has "
                f"{', '.join(sorted(backend.queues))}"
            )
        declared = discover(backend, queues)
        settings: dict[str, Any] = {
            "executors": options["executors"],
            "profile": options["profile"],
            "shutdown_grace": options["shutdown_grace"],
        }
        for key in ("heartbeat", "poll"):
            if options[key] is not None:
                settings[key] = options[key]
        try:
            workers = [app.worker(**settings) for app in backend.ledgers.all(queues)]
        except ActaError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(f"acta: {declared} task(s) on queue(s) {', '.join(queues)}")
        if options["batch"]:
            ran = asyncio.run(drain(workers))
            self.stdout.write(f"ran {ran} job(s)")
        else:
            serve_until_signal(workers)

    def jobs(self, backend: ActaBackend, rest: list[str]) -> None:
        """``acta jobs VERB ...`` with the ledger this backend uses (Django's database)."""
        from acta.cli.main import main

        if not rest or rest[0].startswith("-"):
            rest = rest or ["--help"]
            code = main(["jobs", *rest])
        else:
            where = ["--database", database_url(backend.config.database)]
            where += ["--schema", backend.config.schema]
            code = main(["jobs", rest[0], *where, *rest[1:]])
        if code:
            raise CommandError(f"acta jobs exited with {code}", returncode=code)


def discover(backend: ActaBackend, queues: list[str]) -> int:
    """Import every installed app's ``tasks`` module and declare the tasks found there that run
    on ``backend`` in one of ``queues``; return how many."""
    autodiscover_modules("tasks")
    count = 0
    for name, module in list(sys.modules.items()):
        if not (name == "tasks" or name.endswith(".tasks")) or module is None:
            continue
        for value in list(vars(module).values()):
            ours = isinstance(value, Task) and value.get_backend() is backend
            if ours and value.queue_name in queues:
                backend.definition(backend.app_for(value.queue_name), value)
                count += 1
    return count
