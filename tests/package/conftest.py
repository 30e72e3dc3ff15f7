"""What a user installs, tested as a user gets it: the built wheel and sdist.

These tests run under ``nox -s package`` (noxfile.py), which builds the distributions into a
folder and names it in ``$ACTA_DIST_DIR``. Without it (a plain ``pytest`` run from a checkout)
they skip: there is nothing built to test. They never import acta from the source tree: the
installed wheel is driven in a fresh virtual environment, from a folder outside the checkout.
"""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

import pytest
from package_support import Dist, Installed, dist_dir

# What is installed beside the wheel to test it: mypy for the user-file type check, pytest for
# the plugin's entry point.
CHECK_TOOLS = ["mypy>=1.10", "pytest>=8"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if dist_dir() is not None:
        return
    skip = pytest.mark.skip(reason="needs a built wheel: run `nox -s package`")
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def dist() -> Dist:
    folder = dist_dir()
    assert folder is not None
    wheels = sorted(folder.glob("*.whl"))
    sdists = sorted(folder.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, f"one wheel and one sdist in {folder}"
    return Dist(wheels[0], sdists[0])


@pytest.fixture(scope="session")
def installed(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("fresh")
    root, workdir = base / "venv", base / "work"
    workdir.mkdir()
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    target = f"{dist.wheel}[{','.join(dist.user_extras())}]"
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "-q"]
    done = subprocess.run(
        [*pip, target, *CHECK_TOOLS], capture_output=True, text=True, timeout=600, cwd=workdir
    )
    assert done.returncode == 0, f"pip install {target} failed:\n{done.stdout}\n{done.stderr}"
    return Installed(root, workdir)
