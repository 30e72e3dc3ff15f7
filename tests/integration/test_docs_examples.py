"""Runs the examples of the docs, so they cannot show code or commands that fail.

The convention, for README.md and every page under docs/:

- ``<!-- test: NAME -->`` on the line right before a ```` ```python ```` fence marks the block
  as runnable. Blocks with the same NAME in one file are joined, in order, into one module, so
  a page can build an example up step by step.
- A module that defines ``test_*`` functions runs under pytest, with acta's plugin and its
  fixtures (override ``acta_app`` in the block to use your own application). Any other module
  runs as a script in an empty directory, imported under a name other than ``__main__`` so an
  ``if __name__ == "__main__":`` block (starting a worker, say) is left alone.
- ``<!-- not-tested: REASON -->`` marks a block that is only shown; a python one must still
  compile.
- Shell blocks (``console``, ``bash``, ``sh``, ``shell``) take the same two markers. A tested
  ``console`` block runs each ``$ `` line in order, in one empty directory, and compares what
  it prints with the lines shown under it (``...`` alone on a line stands for any lines, inside
  a line for any text; a command shown with no output is only run). A tested ``bash`` block runs
  as one script. Either must exit 0, with this environment's ``acta`` and ``python`` first on
  PATH. A transcript (a ``$ `` line) in a block with no language must be a ``console`` block.

Every ``python`` and shell block carries one of the two markers. Each example runs in its own
directory, so examples never share files, modules or ledgers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [p for p in [ROOT / "README.md"] if p.exists()]
SHELL = {"console", "bash", "sh", "shell"}
_FENCE = re.compile(r"^```(\w*)\s*$")
_TEST = re.compile(r"^<!--\s*test:\s*([a-z0-9][a-z0-9-]*)\s*-->$")
_SHOWN = re.compile(r"^<!--\s*not-tested:\s*\S.*-->$")
_DEFINES_TESTS = re.compile(r"^(?:async\s+)?def\s+test_", re.MULTILINE)
# Hypothesis's plugin costs most of a second per in-process session and no example uses it.
INI = """\
[pytest]
asyncio_default_fixture_loop_scope = function
addopts = -p no:cacheprovider -p no:hypothesispytest
"""
# Modules run in this process, next to this suite's own: a prefix no suite module uses keeps
# an example named like one of them (``backoff``) from being mistaken for it.
PREFIX = "docs_example_"
SCRIPT_RUNNER = """\
import runpy
from pathlib import Path


def test_script_runs(tmp_path, monkeypatch):
    source = Path(__file__).with_name("{script}.py")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(source), run_name="docs_example")
"""


@dataclass(frozen=True, slots=True)
class Block:
    page: Path
    line: int
    marker: str
    code: str
    lang: str = "python"

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True, slots=True)
class Example:
    page: Path
    name: str
    line: int
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.name}::{self.name}"

    @property
    def defines_tests(self) -> bool:
        return _DEFINES_TESTS.search(self.code) is not None


def fenced_blocks(page: Path) -> list[Block]:
    """Every fence of ``page`` (its language, "" for none) with the line before it (blank lines
    skipped)."""
    lines = page.read_text("utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        code = "\n".join(lines[i + 1 : end]) + "\n"
        out.append(Block(page, i + 1, before, code, fence.group(1)))
        i = end + 1
    return out


def python_blocks(page: Path) -> list[Block]:
    """Each python fence of ``page``."""
    return [b for b in fenced_blocks(page) if b.lang == "python"]


def marked_blocks(page: Path) -> list[Block]:
    """The fences that must carry a marker: python and shell."""
    return [b for b in fenced_blocks(page) if b.lang == "python" or b.lang in SHELL]


def examples(pages: list[Path]) -> list[Example]:
    """The runnable examples of ``pages``: marked blocks, joined by name per page."""
    found: dict[tuple[Path, str], Example] = {}
    for page in pages:
        for block in python_blocks(page):
            m = _TEST.match(block.marker)
            if m is None:
                continue
            key = (page, m.group(1))
            if key in found:
                prior = found[key]
                found[key] = Example(page, prior.name, prior.line, prior.code + "\n" + block.code)
            else:
                found[key] = Example(page, m.group(1), block.line, block.code)
    return list(found.values())


EXAMPLES = examples(PAGES)


def run_example(pytester: pytest.Pytester, example: Example, *args: str) -> pytest.RunResult:
    """Write ``example`` into a fresh pytester directory and run it there, in process."""
    pytester.makeini(INI)
    slug = PREFIX + example.name.replace("-", "_")
    if example.defines_tests:
        pytester.makepyfile(**{f"test_{slug}": example.code})
    else:
        pytester.makepyfile(
            **{slug: example.code, f"test_{slug}": SCRIPT_RUNNER.format(script=slug)}
        )
    return pytester.runpytest_inprocess("-q", *args)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example(
    example: Example, pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    forwarded = [
        f"{flag}={value}"
        for flag in ("--acta-provider", "--acta-dsn")
        if (value := request.config.getoption(flag, default=None))
    ]
    result = run_example(pytester, example, *forwarded)
    outcomes = result.parseoutcomes()
    where = f"{example.page.relative_to(ROOT)}:{example.line} ({example.name})"
    assert result.ret == pytest.ExitCode.OK, f"{where} failed:\n{result.stdout.str()}"
    assert outcomes.get("passed", 0) >= 1, f"{where} ran no test:\n{result.stdout.str()}"


# -- shell blocks ---------------------------------------------------------------------------------


def shell_examples(pages: list[Path]) -> list[Block]:
    """The shell blocks marked to run, each on its own."""
    return [
        b
        for page in pages
        for b in fenced_blocks(page)
        if b.lang in SHELL and _TEST.match(b.marker)
    ]


SHELL_EXAMPLES = shell_examples(PAGES)


def transcript(code: str) -> list[tuple[str, list[str]]]:
    """A console block as (command, the output lines shown under it) pairs."""
    steps: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line.rstrip())
        elif line.strip():
            raise AssertionError(f"output before the first $ command: {line!r}")
    return steps


def output_pattern(shown: list[str]) -> re.Pattern[str]:
    """What a command's shown output accepts: ``...`` alone for any lines, inside a line for any
    text; trailing blank lines do not count."""
    while shown and not shown[-1]:
        shown = shown[:-1]
    parts = []
    for line in shown:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(line).replace(re.escape("..."), r"[^\n]*?") + r"\n")
    return re.compile("".join(parts))


def shell_env() -> dict[str, str]:
    """This environment's acta and python first on PATH; no ledger named by the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTA_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_shell(block: Block, cwd: Path) -> None:
    steps = transcript(block.code) if block.lang == "console" else [(block.code, [])]
    for command, shown in steps:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=cwd,
            env=shell_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        said = f"{block.where}: $ {command}\n{done.stdout}{done.stderr}"
        assert done.returncode == 0, f"exited {done.returncode}: {said}"
        if shown:
            printed = "".join(line.rstrip() + "\n" for line in done.stdout.splitlines())
            printed = printed.rstrip("\n") + "\n"
            assert output_pattern(shown).fullmatch(printed), f"printed otherwise: {said}"


@pytest.mark.parametrize(
    "block", SHELL_EXAMPLES, ids=[f"{b.page.name}:{b.line}" for b in SHELL_EXAMPLES]
)
def test_shell_example(block: Block, tmp_path: Path) -> None:
    run_shell(block, tmp_path)


def test_transcripts_are_console_blocks() -> None:
    bare = [
        b.where
        for page in PAGES
        for b in fenced_blocks(page)
        if b.lang == "" and any(line.startswith("$ ") for line in b.code.splitlines())
    ]
    assert bare == [], "a block showing `$ command` lines is a ```console block"


def test_console_output_matching() -> None:
    shown = ["applied 0001_ledger", "...", "done (... applied)"]
    assert output_pattern(shown).fullmatch("applied 0001_ledger\ndone (16 applied)\n")
    assert output_pattern(shown).fullmatch("applied 0001_ledger\nx\ny\ndone (2 applied)\n")
    assert not output_pattern(shown).fullmatch("applied 0002_gates\ndone (1 applied)\n")
    assert transcript("$ a\nout\n$ b\n") == [("a", ["out"]), ("b", [])]


def test_a_failing_command_fails(tmp_path: Path) -> None:
    block = Block(ROOT / "README.md", 1, "", "$ acta schema sql --dialect nosuch\n", "console")
    with pytest.raises(AssertionError, match="exited 2"):
        run_shell(block, tmp_path)
    wrong = Block(ROOT / "README.md", 1, "", "$ echo one\ntwo\n", "console")
    with pytest.raises(AssertionError, match="printed otherwise"):
        run_shell(wrong, tmp_path)


# -- the convention itself ----------------------------------------------------------------------


def test_every_python_and_shell_block_is_marked() -> None:
    unmarked = [
        b.where
        for page in PAGES
        for b in marked_blocks(page)
        if not (_TEST.match(b.marker) or _SHOWN.match(b.marker))
    ]
    assert unmarked == [], "mark each with <!-- test: NAME --> or <!-- not-tested: REASON -->"


def test_shown_blocks_compile() -> None:
    for page in PAGES:
        for block in python_blocks(page):
            if _SHOWN.match(block.marker):
                compile(block.code, f"{page.name}:{block.line}", "exec")


def test_no_marker_is_left_without_its_block() -> None:
    dangling = []
    for page in PAGES:
        lines = page.read_text("utf-8").splitlines()
        for number, line in enumerate(lines):
            if _TEST.match(line.strip()) or _SHOWN.match(line.strip()):
                after = next((x for x in lines[number + 1 :] if x.strip()), "")
                if after.strip() not in {f"```{lang}" for lang in {"python", *SHELL}}:
                    dangling.append(f"{page.name}:{number + 1}")
    assert dangling == []


def test_the_guide_has_runnable_examples() -> None:
    pages = {e.page.name for e in EXAMPLES}
    assert {"testing.md", "jobs.md", "workers.md"} <= pages


def test_a_failing_example_fails(pytester: pytest.Pytester) -> None:
    broken = Example(
        Path("broken.md"),
        "broken",
        1,
        textwrap.dedent(
            """\
            def test_wrong(acta_host):
                assert acta_host.tick() == "completed"
            """
        ),
    )
    assert run_example(pytester, broken).ret == pytest.ExitCode.TESTS_FAILED


def test_a_failing_script_fails(pytester: pytest.Pytester) -> None:
    script = Example(Path("broken.md"), "script", 1, "raise SystemExit('the example broke')\n")
    assert run_example(pytester, script).ret == pytest.ExitCode.TESTS_FAILED


def test_blocks_with_one_name_are_joined(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- test: two-steps -->\n```python\nx = 1\n```\n\ntext\n\n"
        "<!-- test: two-steps -->\n\n```python\nassert x == 1\n```\n",
        "utf-8",
    )
    [example] = examples([page])
    assert example.code == "x = 1\n\nassert x == 1\n" and example.line == 2
