"""Django's test runner with acta's connections closed before the test databases go.

acta's backend keeps its own connection pools to the ledger's database; PostgreSQL refuses
to drop a database that still has sessions, so ``manage.py test`` would end with "database
... is being accessed by other users". ``TEST_RUNNER = "acta.contrib.django.testing.
ActaTestRunner"`` closes them first.
"""

from __future__ import annotations

from typing import Any

from django.test.runner import DiscoverRunner


def close_ledgers() -> None:
    """Close the ledger connections of every acta backend in ``TASKS``."""
    from django.tasks import task_backends

    for backend in task_backends.all():
        ledgers = getattr(backend, "ledgers", None)
        if ledgers is not None:
            ledgers.close()


class ActaTestRunner(DiscoverRunner):
    def teardown_databases(self, old_config: Any, **kwargs: Any) -> None:
        close_ledgers()
        super().teardown_databases(old_config, **kwargs)
