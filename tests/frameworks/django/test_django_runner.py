"""Django's own test runner, as a project runs it: `manage.py test` creates the test database,
`migrate` puts the ledger in it, and the project's TransactionTestCase tests run the tasks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent


def test_manage_py_test(tmp_path: Path) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings"}
    env["ACTA_DJANGO_DIR"] = str(tmp_path)  # its own files, apart from pytest-django's
    env.pop("ACTA_DJANGO_NAME", None)
    if env.get("ACTA_DJANGO_DB") == "postgres":
        # Its own test database: pytest-django's (test_acta_django) is in use by this session.
        env["ACTA_DJANGO_NAME"] = "acta_django_runner"
    done = subprocess.run(
        [sys.executable, "manage.py", "test", "project.shop", "--noinput", "-v", "1"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Ran 2 tests" in done.stderr and "OK" in done.stderr, done.stderr[-2000:]
