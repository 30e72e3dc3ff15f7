"""The built wheel and sdist hold every file of the source packages, the licence and the right
metadata. A SQL file, migration, template or static asset missing from the wheel would pass
every test of an editable install and break every user's first run."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import tarfile
from pathlib import Path

from package_support import ROOT, Dist

PACKAGES = ("acta", "acta_testing")
# The kinds of data file the wheel must carry, and at least how many of each the source has:
# a glob that suddenly matches nothing would make the listing test vacuous.
DATA_KINDS = {
    "queries": ("acta/provider/*/queries/*.sql", 4),
    "migrations": ("acta/provider/*/migrations/*.sql", 10),
    "schema snapshots": ("acta/provider/*/schema.sql", 2),
    "templates": ("acta/dashboard/templates/*.html", 5),
    "static assets": ("acta/dashboard/static/*", 3),
    "type markers": ("*/py.typed", 2),
}


def source_files() -> list[str]:
    """The files of the source packages, as git tracks them (a checkout's stray files, such as
    caches, are not part of the source)."""
    done = subprocess.run(
        ["git", "ls-files", "--", *PACKAGES], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode == 0 and done.stdout.strip():
        # A tracked file deleted in this work tree (a change under way) is not built either.
        return sorted(f for f in done.stdout.split() if (ROOT / f).exists())
    return sorted(  # a source tree without git (an unpacked sdist)
        p.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for p in (ROOT / package).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def version_in_source() -> str:
    text = (ROOT / "acta" / "about.py").read_text("utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    assert found is not None
    return found.group(1)


def test_every_source_file_is_in_the_wheel(dist: Dist) -> None:
    names = dist.wheel_names()
    missing = [f for f in source_files() if f not in names]
    assert missing == [], f"missing from {dist.wheel.name}: {missing}"


def test_every_kind_of_data_file_is_there(dist: Dist) -> None:
    names = dist.wheel_names()
    for kind, (pattern, at_least) in DATA_KINDS.items():
        in_source = [f for f in source_files() if fnmatch.fnmatch(f, pattern)]
        assert len(in_source) >= at_least, f"{kind}: {pattern} matched {in_source}"
        assert set(in_source) <= names, f"{kind} missing: {set(in_source) - names}"


def test_the_wheel_holds_nothing_from_outside_the_packages(dist: Dist) -> None:
    tops = {n.split("/", 1)[0] for n in dist.wheel_names()}
    dist_info = f"acta_jobs-{version_in_source()}.dist-info"
    assert tops == {*PACKAGES, dist_info}


def test_metadata(dist: Dist) -> None:
    meta = dist.metadata()
    assert meta["Name"] == ["acta-jobs"]
    assert meta["Version"] == [version_in_source()]
    assert meta["License-Expression"] == ["Apache-2.0"]
    assert meta["Requires-Python"] == [">=3.11"]
    assert {"postgres", "dashboard", "otel", "sqlalchemy"} <= set(meta["Provides-Extra"])


def test_the_licence_is_in_both_distributions(dist: Dist) -> None:
    licence = (ROOT / "LICENSE").read_text("utf-8")
    assert "Apache License" in licence and "Version 2.0" in licence
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in dist.wheel_names())
    with tarfile.open(dist.sdist) as tar:
        members = {Path(m.name).relative_to(Path(m.name).parts[0]).as_posix() for m in tar}
    for needed in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "acta/about.py"):
        assert needed in members, f"{needed} missing from {dist.sdist.name}"
    assert {f for f in source_files() if f.endswith(".sql")} <= members
