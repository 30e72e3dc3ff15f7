"""docs/guide/flask.md's example, run as the guide shows it (the docs tests only compile it:
Flask is installed in the frameworks session)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "flask.md"


def test_the_flask_guide_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(
        r"<!-- not-tested: [^>]*test_guide\.py runs this block -->\n```python\n(.*?)```",
        GUIDE.read_text("utf-8"),
        re.DOTALL,
    )
    assert len(blocks) == 1
    script = tmp_path / "shop.py"
    script.write_text(blocks[0])
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    runpy.run_path(str(script), run_name="docs_example")
