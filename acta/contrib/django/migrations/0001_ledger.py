"""The ledger, applied by acta's own migrator to the database ``migrate`` runs on.

Not one Django migration per ledger migration: acta's dialects number theirs differently
(SQLite and PostgreSQL do not have the same count), and acta's migrator keeps its own version
table, plans only what is missing and is forward-only, so two bookkeepings would only
disagree. This migration creates the ledger; afterwards every ``manage.py migrate`` applies
whatever a newer acta brings (``post_migrate``, acta.contrib.django.schema.after_migrate), with
no Django migration to add per acta release.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import migrations

from acta.contrib.django.schema import apply_ledger


class Migration(migrations.Migration):
    # acta's migrator uses a connection of its own: Django's must not hold a transaction
    # (SQLite's write lock) while it runs.
    atomic = False
    initial = True
    dependencies: ClassVar[list[Any]] = []
    operations: ClassVar[list[Any]] = [
        migrations.RunPython(apply_ledger, migrations.RunPython.noop, elidable=False)
    ]
