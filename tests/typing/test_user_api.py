"""The public API type-checks as a user writes it (issue 28 item 5): ``mypy --strict`` passes on
``user_api.py``, a module that declares, enqueues, reads and operates jobs with no casts and no
``type: ignore``; and the same module with typos in option names or values fails, so the pass
means the options are checked, not that they are ``Any``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
USER_FILE = HERE / "user_api.py"

TYPOS = """

def typos() -> None:
    charge_card.enqueue(Order(1, 1), dely="5m")
    app.enqueue("export", 1, priorty=3)
    app.enqueue("export", 1, deadline_policy="soft")
    app.job("x", max_attemps=3)
    app.job("y", audit="verbose")


async def spawn_typo(ctx: JobContext) -> None:
    await ctx.spawn(send_receipt, "r-2", name="late", dely="5m")
"""


def _mypy(*paths: Path) -> subprocess.CompletedProcess[str]:
    """The venv's mypy, strict, on the files, as a separate process (no cache left behind)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            "/dev/null",
            "--no-error-summary",
            *map(str, paths),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_user_module_uses_no_escape_hatch() -> None:
    text = USER_FILE.read_text()
    assert "cast(" not in text and "# type: ignore" not in text and "Any" not in text


def test_mypy_strict_passes_on_the_user_module_and_catches_typos(tmp_path: Path) -> None:
    # One mypy process for both files: analysing acta is most of its time.
    broken = tmp_path / "user_api_typos.py"
    broken.write_text(USER_FILE.read_text() + TYPOS)
    done = _mypy(USER_FILE, broken)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if "user_api.py" in line] == []  # the user module is clean
    for complaint in (
        'Unexpected keyword argument "dely"',
        'Unexpected keyword argument "priorty"',
        'Argument "deadline_policy"',
        'Unexpected keyword argument "max_attemps"',
        'Argument "audit"',
        'Unexpected keyword argument "dely" for "spawn"',
    ):
        assert complaint in done.stdout, done.stdout
