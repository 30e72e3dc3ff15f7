"""docs/guide/django.md: its settings are accepted by the backend, and its naming rule is the
code's (the docs tests only compile the guide's blocks: Django 6 needs Python 3.12)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from acta.contrib.django.ledger import Settings, definition_name

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "django.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text("utf-8"), re.DOTALL)


def test_the_guides_settings_are_accepted(tmp_path: Path) -> None:
    settings: dict[str, Any] = {"BASE_DIR": tmp_path}
    exec(blocks()[0], settings)
    database = settings["DATABASES"]["default"]
    assert database["OPTIONS"] == {"transaction_mode": "IMMEDIATE"}
    assert str(database["TEST"]["NAME"]).endswith(".sqlite3")
    backend = settings["TASKS"]["default"]
    assert backend["BACKEND"] == "acta.contrib.django.ActaBackend"
    parsed = Settings.parse("default", backend["OPTIONS"])
    assert parsed.namespace("mail") == "mail" and parsed.policy["max_attempts"] == 5


def test_the_guides_naming_table_is_the_codes() -> None:
    text = GUIDE.read_text("utf-8")
    assert "`shop.tasks.send_receipt` | the job definition `shop.tasks.send-receipt`" in text
    assert definition_name("shop.tasks.send_receipt") == "shop.tasks.send-receipt"
