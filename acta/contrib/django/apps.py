"""The Django app: its label, its migration (the ledger) and its system checks."""

from __future__ import annotations

from django.apps import AppConfig


class ActaConfig(AppConfig):
    name = "acta.contrib.django"
    label = "acta"
    verbose_name = "acta jobs"

    def ready(self) -> None:
        from acta.contrib.django import checks

        checks.register()
