"""The framework integrations' tests: Starlette/FastAPI lifespans, Django's tasks backend, Flask.

Each sub-folder needs its framework installed (Django 6 needs Python 3.12+), so a folder whose
framework is missing is left out of collection: the default suite on Python 3.11 runs what it
can. The ``frameworks`` nox session installs them all and sets ``ACTA_FRAMEWORKS=required``;
then a missing framework is an error, never a silent skip.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

_NEEDS = {
    "asgi": ("starlette", "httpx", "uvicorn"),
    "django": ("django.tasks", "pytest_django"),
    "flask": ("flask", "flask_sqlalchemy"),
}


def _missing(modules: tuple[str, ...]) -> list[str]:
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


collect_ignore = []
for _folder, _modules in _NEEDS.items():
    _lacking = _missing(_modules)
    if _lacking and os.environ.get("ACTA_FRAMEWORKS") == "required":
        raise pytest.UsageError(
            f"tests/frameworks/{_folder} needs {', '.join(_lacking)} "
            "(ACTA_FRAMEWORKS=required: the frameworks session installs them)"
        )
    if _lacking:
        collect_ignore.append(_folder)
