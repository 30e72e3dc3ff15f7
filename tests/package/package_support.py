"""Shared by the package tests: the built distributions and a fresh install of the wheel."""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Extras for developing acta itself, not for users: the fresh install leaves them out.
DEVELOPER_EXTRAS = {"test", "browser", "dev"}


def dist_dir() -> Path | None:
    """The folder ``nox -s package`` built the wheel and sdist into, if any."""
    value = os.environ.get("ACTA_DIST_DIR")
    return Path(value) if value else None


@dataclass(frozen=True, slots=True)
class Dist:
    wheel: Path
    sdist: Path

    def wheel_names(self) -> set[str]:
        with zipfile.ZipFile(self.wheel) as z:
            return set(z.namelist())

    def metadata(self) -> dict[str, list[str]]:
        """The wheel's METADATA fields, each a list of its values."""
        with zipfile.ZipFile(self.wheel) as z:
            name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            message = Parser().parsestr(z.read(name).decode("utf-8"))
        fields: dict[str, list[str]] = {}
        for key, value in message.items():
            fields.setdefault(key, []).append(value)
        return fields

    def requirements(self, extra: str) -> list[str]:
        """The distribution names the wheel requires for ``extra``."""
        found = []
        for line in self.metadata().get("Requires-Dist", []):
            requirement, _, marker = line.partition(";")
            if re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", marker):
                name = re.match(r"[A-Za-z0-9_.-]+", requirement.strip())
                assert name is not None, line
                found.append(name.group(0))
        return found

    def user_extras(self) -> list[str]:
        return sorted(set(self.metadata().get("Provides-Extra", [])) - DEVELOPER_EXTRAS)


@dataclass(frozen=True, slots=True)
class Installed:
    """A fresh virtual environment holding the wheel, and a folder outside the checkout."""

    root: Path
    workdir: Path

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        done = subprocess.run(
            argv, cwd=self.workdir, env=env, capture_output=True, text=True, timeout=300
        )
        if check:
            assert done.returncode == 0, (
                f"{' '.join(argv)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
            )
        return done

    def python(self, code: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(self.bin("python"), "-c", code, check=check)
