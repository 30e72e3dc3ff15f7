"""A small Django project for acta's backend tests: SQLite or PostgreSQL by $ACTA_DJANGO_DB."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET_KEY = "tests-only"
DEBUG = False
USE_TZ = True
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "project.shop.urls"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "acta.contrib.django",
    "project.shop",
]
MIDDLEWARE: list[str] = []
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
TEST_RUNNER = "acta.contrib.django.testing.ActaTestRunner"  # for manage.py test

_KIND = os.environ.get("ACTA_DJANGO_DB", "sqlite")
# A worker process a test starts is pointed at the test's database by $ACTA_DJANGO_NAME.
_FILES = Path(os.environ.get("ACTA_DJANGO_DIR") or tempfile.mkdtemp(prefix="acta-django-"))
if _KIND == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("ACTA_DJANGO_NAME", "acta_django"),
            "USER": os.environ.get("PGUSER", "postgres"),
            "HOST": os.environ.get("PGHOST", "127.0.0.1"),
            "PORT": os.environ.get("PGPORT", "5432"),
            "ATOMIC_REQUESTS": True,
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("ACTA_DJANGO_NAME", str(_FILES / "shop.sqlite3")),
            "OPTIONS": {"transaction_mode": "IMMEDIATE"},
            "ATOMIC_REQUESTS": True,
            "TEST": {"NAME": str(_FILES / "test-shop.sqlite3")},
        }
    }

TASKS = {
    "default": {
        "BACKEND": "acta.contrib.django.ActaBackend",
        "QUEUES": ["default", "mail"],
        "OPTIONS": {
            "NAMESPACES": {"mail": "mail"},
            "POLICY": {"max_attempts": 2, "backoff": "1ms"},
        },
    }
}
