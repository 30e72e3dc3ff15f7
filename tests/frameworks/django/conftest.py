"""pytest-django runs these tests with the project beside this file (project.settings); the
database is SQLite unless $ACTA_DJANGO_DB=postgres. The ledger is in Django's test database:
``migrate`` put it there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.tasks import task_backends

from acta.contrib.django.backend import ActaBackend


@pytest.fixture
def backend(transactional_db: None) -> ActaBackend:
    """The backend, with the jobs earlier tests left cancelled: Django's flush empties the
    shop's tables between tests, not the ledger, whose jobs would then look for orders that
    are gone."""
    found = task_backends["default"]
    assert isinstance(found, ActaBackend)
    for app in found.ledgers.all(sorted(found.queues)):
        for job in app.jobs(limit=1000):
            if not job.status.terminal:
                app.cancel(job.job_ref, reason="left by an earlier test")
    return found


@pytest.fixture
def drain(backend: ActaBackend, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """Run what is due on the given queues with `manage.py acta worker --batch`."""

    def run(*queues: str) -> int:
        args = [a for q in queues for a in ("--queue", q)]
        call_command("acta", "worker", "--batch", "--heartbeat", "1", *args)
        out = capsys.readouterr().out.strip().splitlines()[-1]
        return int(out.split()[1])

    yield run
    backend.ledgers.close()
