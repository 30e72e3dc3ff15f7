"""acta as Django's tasks backend (Django 6.0+, ``django.tasks``).

Add ``"acta.contrib.django"`` to ``INSTALLED_APPS`` (its migration puts the ledger in the
database ``manage.py migrate`` is pointed at) and name ``acta.contrib.django.ActaBackend`` in
``TASKS``. See docs/guide/django.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ActaBackend"]


def __getattr__(name: str) -> Any:
    # Importing the backend imports django.tasks; keep `import acta.contrib.django` (which
    # INSTALLED_APPS does before settings are ready) free of it.
    if name == "ActaBackend":
        from acta.contrib.django.backend import ActaBackend

        return ActaBackend
    raise AttributeError(name)
