"""Runs the Python examples of the user guide, so the docs cannot show code that fails.

The convention, for docs/guide/*.md and README.md:

- ``<!-- test: NAME -->`` on the line right before a ```` ```python ```` fence marks the block
  as runnable. Blocks with the same NAME in one file are joined, in order, into one module, so
  a page can build an example up step by step.
- A module that defines ``test_*`` functions runs under pytest, with acta's plugin and its
  fixtures (override ``acta_app`` in the block to use your own application). Any other module
  runs as a script in an empty directory, imported under a name other than ``__main__`` so an
  ``if __name__ == "__main__":`` block (starting a worker, say) is left alone.
- ``<!-- not-tested: REASON -->`` marks a block that is only shown; it must still compile.

Every ``python`` block carries one of the two markers. Each example runs in its own pytester
directory, so examples never share files, modules or ledgers.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "guide").glob("*.md")) + [
    p for p in [ROOT / "README.md"] if p.exists()
]
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


def python_blocks(page: Path) -> list[Block]:
    """Each python fence of ``page`` with the line before it (blank lines skipped)."""
    lines = page.read_text("utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence or not fence.group(1):
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
        if fence.group(1) == "python":
            before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            out.append(Block(page, i + 1, before, "\n".join(lines[i + 1 : end]) + "\n"))
        i = end + 1
    return out


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


# -- the convention itself ----------------------------------------------------------------------


def test_every_python_block_is_marked() -> None:
    unmarked = [
        f"{b.page.relative_to(ROOT)}:{b.line}"
        for page in PAGES
        for b in python_blocks(page)
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
                if after.strip() != "```python":
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
