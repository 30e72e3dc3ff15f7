"""Applying the ledger from ``manage.py migrate`` (the migrations call ``apply_ledger``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from acta.provider.factory import open_provider


def ledger_schemas() -> dict[str, str]:
    """The ``DATABASES`` aliases that hold a ledger, with its schema: those the acta backends
    of ``TASKS`` name (``default`` when no acta backend is configured)."""
    found: dict[str, str] = {}
    for config in getattr(settings, "TASKS", {}).values():
        if str(config.get("BACKEND", "")).startswith("acta.contrib.django"):
            options = config.get("OPTIONS", {})
            found[options.get("DATABASE", "default")] = options.get("SCHEMA", "acta")
    return found or {"default": "acta"}


def apply_ledger(apps: Any, schema_editor: Any) -> None:
    """Bring the ledger of this migration's database up to date with acta's migrator."""
    migrate_ledger(schema_editor.connection.alias)


def after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """``post_migrate``: every ``manage.py migrate`` brings the ledger up to date, so a new
    acta release's ledger migrations need no Django migration of their own."""
    if getattr(sender, "label", None) == "acta":
        migrate_ledger(using)


def migrate_ledger(alias: str) -> list[str]:
    """Apply acta's pending ledger migrations to ``alias`` if it holds a ledger."""
    from acta.contrib.django.ledger import database_url

    schema = ledger_schemas().get(alias)
    if schema is None:
        return []  # this database holds no ledger
    provider = open_provider(database_url(alias), schema=schema)
    try:
        return provider.migrate()
    finally:
        provider.close()
