"""CI runs the README's second command, unchanged: a newcomer who copies it runs what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    first = re.search(r"^```bash\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert first is not None, "the README opens with a bash block of two commands"
    return [line for line in first.group(1).splitlines() if line and not line.startswith("#")]


def test_ci_runs_the_readme_second_command() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    script = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    assert commands[1] in script, f".ci/run must run the README's second command: {commands[1]}"


def test_ci_runs_every_default_session() -> None:
    # The sessions CI names are nox's defaults, so a bare `nox` runs the same.
    sessions = readme_commands()[1].split("nox -s", 1)[1].split()
    noxfile = (ROOT / "noxfile.py").read_text("utf-8")
    default = re.search(r"^nox\.options\.sessions = \[(.*)\]$", noxfile, re.MULTILINE)
    assert default is not None
    assert re.findall(r'"([^"]+)"', default.group(1)) == sessions
    assert {"lint", "tests", "conformance_matrix", "package"} <= set(sessions)


def test_the_first_command_runs_the_demo_from_a_checkout() -> None:
    first = readme_commands()[0]
    assert "pip install -q ." in first and first.endswith("acta demo")
