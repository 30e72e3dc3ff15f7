"""House rules that a reviewer should not have to check by eye."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("acta", "acta_testing", "anvil", "chaos")

WALL_CLOCK = re.compile(
    r"time\.time\(|time\.time_ns\(|time\.monotonic\(|time\.perf_counter\(|"
    r"datetime\.(?:now|utcnow|today)\(|date\.today\(|time\.sleep\(|asyncio\.sleep\("
)


# Waits bounded by real time: they belong on the clock (clock.sleep_until with a deadline), or
# a test on the manual clock would wait for real. A line that must wait on real time says why
# in a comment starting "wall-clock wait:".
TIMED_WAIT = re.compile(
    r"asyncio\.wait_for\(|asyncio\.wait\([^#]*timeout=|\.wait\(\s*timeout|"
    r"\.result\(\s*timeout|\.join\(\s*timeout"
)
WAIVER = "# wall-clock wait:"


def _sources(*packages: str) -> list[Path]:
    return sorted(
        p for pkg in packages for p in (ROOT / pkg).rglob("*.py") if (ROOT / pkg).exists()
    )


def test_only_the_clock_module_reads_wall_time_or_sleeps() -> None:
    offenders = []
    for path in _sources("acta", "acta_testing"):
        if path == ROOT / "acta" / "clock.py":
            continue
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if WALL_CLOCK.search(code):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_no_wait_is_bounded_by_real_time_outside_the_clock_module() -> None:
    offenders = []
    for path in _sources("acta", "acta_testing"):
        if path == ROOT / "acta" / "clock.py":
            continue
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if WAIVER in line:
                continue
            if TIMED_WAIT.search(line.split("#", 1)[0]):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_timed_wait_grep_catches_what_it_should() -> None:
    assert TIMED_WAIT.search("await asyncio.wait({handler}, timeout=1.0)")
    assert TIMED_WAIT.search("await asyncio.wait_for(event.wait(), 5)")
    assert TIMED_WAIT.search("done = event.wait(timeout)")
    assert TIMED_WAIT.search("future.result(timeout=30)")
    assert not TIMED_WAIT.search("await asyncio.wait(pending, return_when=FIRST_COMPLETED)")
    assert not TIMED_WAIT.search("await clock.sleep_until(deadline, wake)")


def test_the_grep_catches_what_it_should() -> None:
    assert WALL_CLOCK.search("x = datetime.now(UTC)")
    assert WALL_CLOCK.search("await asyncio.sleep(1)")
    assert not WALL_CLOCK.search("clock.now()")


def test_no_source_file_over_600_lines() -> None:
    too_long = []
    for path in _sources(*PACKAGES, "tests", "conformance"):
        if "migrations" in path.parts:
            continue
        count = len(path.read_text("utf-8").splitlines())
        if count > 600:
            too_long.append(f"{path.relative_to(ROOT)}: {count} lines")
    assert too_long == []


def test_every_module_has_a_docstring() -> None:
    missing = []
    for path in _sources("acta", "acta_testing"):
        text = path.read_text("utf-8").lstrip()
        if text and not text.startswith(('"""', "'''")):
            missing.append(str(path.relative_to(ROOT)))
    assert missing == []


def test_test_module_names_are_unique_across_suites() -> None:
    """pytest imports tests/unit and tests/integration modules by their bare names (no
    __init__.py there), so two test files with one name would clash; conformance/ and chaos/
    are packages, but their names are kept unique too so a spec reads the same everywhere."""
    seen: dict[str, list[str]] = {}
    for folder in ("tests/unit", "tests/integration", "conformance", "chaos"):
        for path in (ROOT / folder).glob("*.py"):
            if path.name.startswith("test_"):
                seen.setdefault(path.name, []).append(folder)
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
