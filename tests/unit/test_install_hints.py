"""Every install hint names acta's own distribution, ``acta-jobs``.

``acta`` on the package index is an unrelated project: ``pip install 'acta[postgres]'`` on a fresh
machine installs it, not this one. These tests read the docs and the code for hints in the old
form, and check that the one place the name lives (acta/about.py) agrees with pyproject.toml.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from acta.about import DISTRIBUTION, __version__, install_hint

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()

# The wrong forms: "pip install acta" (any options before it, quoted or not) with nothing after
# the name but an extra or the end of the word; an extra written on the bare name ("acta[x]");
# and asking installed metadata for "acta", which is the other project's name.
OLD_FORMS = [
    re.compile(r"pip3?\s+install\s+(?:-\S+\s+)*['\"]?acta(?![\w-])"),
    re.compile(r"(?<![\w.-])acta\["),
    re.compile(r"version\(\s*['\"]acta['\"]\s*\)"),
]
SOURCE_DIRS = ["acta", "acta_testing", "anvil", "chaos", "conformance", "tests", "docs"]
SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".js"}
TOP_FILES = ["README.md", "CHANGELOG.md", "pyproject.toml", "noxfile.py", ".ci/run"]
# A dated page (docs/benchmarks/2026-11-30-..., profile-2026-12-02.md) records a past run as it
# was, install commands included; it is history, not advice.
DATED = re.compile(r"\d{4}-\d{2}-\d{2}")


def scanned_files() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES if (ROOT / name).exists()]
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            wanted = path.suffix in SUFFIXES and not DATED.search(path.name)
            if wanted and path.is_file() and path.resolve() != THIS:
                files.append(path)
    return files


def old_hints(text: str) -> list[str]:
    return [m.group(0) for pattern in OLD_FORMS for m in pattern.finditer(text)]


def test_no_file_names_the_other_distribution() -> None:
    found = []
    for path in scanned_files():
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            for hint in old_hints(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {hint!r}")
    assert found == [], f"install hints must name {DISTRIBUTION}:\n" + "\n".join(found)


def test_the_scan_covers_the_docs_and_the_messages() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in scanned_files()}
    assert {"README.md", "docs/guide/production.md", "acta/provider/registry.py"} <= names
    assert "acta/cli/dashboard.py" in names


@pytest.mark.parametrize(
    "text",
    [
        "pip install acta",
        "pip install 'acta[postgres]'",
        'pip install -q "acta[dashboard]"',
        "needs acta[otel]",
        'metadata.version("acta")',
    ],
)
def test_the_old_forms_are_caught(text: str) -> None:
    assert old_hints(text), text


@pytest.mark.parametrize(
    "text",
    [
        "pip install acta-jobs",
        "pip install 'acta-jobs[postgres]'",
        "pip install -e '.[postgres]'",
        "pip install actual",
        "from acta import Acta",
        'version("acta-jobs")',
    ],
)
def test_the_new_forms_pass(text: str) -> None:
    assert old_hints(text) == [], text


def test_pyproject_agrees_with_acta_about() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    assert project["project"]["name"] == DISTRIBUTION == "acta-jobs"
    assert "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "acta.about.__version__"}
    # The extras that name acta itself name the distribution, not the import name.
    extras = project["project"]["optional-dependencies"]
    self_refs = [r for reqs in extras.values() for r in reqs if r.startswith("acta")]
    assert self_refs and all(r.startswith(f"{DISTRIBUTION}[") for r in self_refs)


def test_the_hint_and_the_version() -> None:
    assert install_hint() == "pip install acta-jobs"
    assert install_hint("postgres") == "pip install 'acta-jobs[postgres]'"
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:[ab]\d+|rc\d+|\.dev\d+)?", __version__)
    import acta

    assert acta.__version__ == __version__


def test_a_missing_driver_names_the_extra_with_the_distribution() -> None:
    from dataclasses import replace

    from acta.errors import ConfigurationError
    from acta.provider import registry

    def opener(target: str, schema: str, options: object) -> object:
        raise ImportError("No module named 'psycopg'")

    entry = replace(registry.entry("postgres"), opener=opener)  # as if psycopg were missing
    with pytest.raises(ConfigurationError, match=r"pip install 'acta-jobs\[postgres\]'"):
        entry.open("postgresql://nowhere/db")


def test_the_classifiers_name_the_pythons_ci_runs() -> None:
    noxfile = (ROOT / "noxfile.py").read_text("utf-8")
    default = re.search(r'^PYTHON = "([\d.]+)"$', noxfile, re.MULTILINE)
    matrix = re.search(r"^MATRIX = \[(.*)\]$", noxfile, re.MULTILINE)
    assert default is not None and matrix is not None
    tested = {default.group(1), *re.findall(r'"([\d.]+)"', matrix.group(1))}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    claimed = {
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    assert claimed == tested
    assert (
        project["requires-python"]
        == f">={min(tested, key=lambda v: tuple(map(int, v.split('.'))))}"
    )
