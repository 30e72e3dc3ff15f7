from __future__ import annotations

from typing import Any, ClassVar

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies: ClassVar[list[tuple[str, str]]] = []
    operations: ClassVar[list[Any]] = [
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("number", models.IntegerField(unique=True)),
                ("handled", models.BooleanField(default=False)),
            ],
        )
    ]
