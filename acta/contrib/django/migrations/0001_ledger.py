"""The ledger, applied by acta's own migrator to the database ``migrate`` runs on.

One Django migration per acta schema release, not per ledger migration: acta's dialects
number their migrations differently (SQLite and PostgreSQL do not have the same count), and
acta's migrator keeps its own version table, plans only what is missing and is forward-only.
Each Django migration names the last ledger migration of each dialect it brings
(``LEDGER``); tests/frameworks/django/test_migrations.py fails when acta ships a ledger
migration no Django migration brings yet, naming the file to add.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import migrations

from acta.contrib.django.schema import apply_ledger

LEDGER = {"sqlite": "0016_policy_in_force", "postgres": "0019_policy_in_force"}


class Migration(migrations.Migration):
    # acta's migrator uses a connection of its own: Django's must not hold a transaction
    # (SQLite's write lock) while it runs.
    atomic = False
    initial = True
    dependencies: ClassVar[list[Any]] = []
    operations: ClassVar[list[Any]] = [
        migrations.RunPython(apply_ledger, migrations.RunPython.noop, elidable=False)
    ]
