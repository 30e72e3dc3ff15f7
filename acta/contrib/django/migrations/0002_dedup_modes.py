"""Brings the ledger's deduplication modes (sqlite 0017, postgres 0020) through ``migrate``
(written before ``post_migrate`` applied every new ledger migration; kept, since projects may
have recorded it)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import migrations

from acta.contrib.django.schema import apply_ledger


class Migration(migrations.Migration):
    atomic = False  # as 0001_ledger: acta's migrator uses a connection of its own
    dependencies: ClassVar[list[Any]] = [("acta", "0001_ledger")]
    operations: ClassVar[list[Any]] = [
        migrations.RunPython(apply_ledger, migrations.RunPython.noop, elidable=False)
    ]
