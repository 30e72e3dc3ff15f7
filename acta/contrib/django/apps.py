"""The Django app: its label, its migration (the ledger) and its system checks."""

from __future__ import annotations

from django.apps import AppConfig


class ActaConfig(AppConfig):
    name = "acta.contrib.django"
    label = "acta"
    verbose_name = "acta jobs"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from acta.contrib.django import checks
        from acta.contrib.django.schema import after_migrate

        checks.register()
        post_migrate.connect(after_migrate, sender=self, dispatch_uid="acta.ledger")
