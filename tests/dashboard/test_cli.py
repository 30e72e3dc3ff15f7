"""``acta dashboard``: refuses a non-loopback bind before serving, and serves the app's
dashboard on loopback otherwise (uvicorn's ``run`` is captured instead of blocking)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from acta.cli.main import main
from tests.dashboard.conftest import local_client

APP = """
from acta import Acta

app = Acta(database={database!r})


@app.job("greet")
def greet(name: str) -> str:
    return f"hello {{name}}"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    database = tmp_path / "ledger.sqlite3"
    (tmp_path / "dash_project.py").write_text(APP.format(database=str(database)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "dash_project", raising=False)
    assert main(["schema", "apply", "--database", str(database)]) == 0
    return tmp_path


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "example.com"])
def test_a_non_loopback_bind_is_refused_before_serving(
    project: Path, host: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[Any] = []
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: served.append((a, k)))
    assert main(["dashboard", "--app", "dash_project:app", "--host", host]) == 2
    assert "binds loopback addresses only" in capsys.readouterr().err
    assert served == []


def test_an_unknown_verb_family_is_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[Any] = []
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: served.append((a, k)))
    assert main(["dashboard", "--app", "dash_project:app", "--verbs", "jobs,nuke"]) == 2
    assert "unknown family nuke" in capsys.readouterr().err
    assert served == []


def test_it_serves_the_apps_dashboard_on_loopback(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: served.append((a, k)))
    assert (
        main(["dashboard", "--app", "dash_project:app", "--port", "9123", "--verbs", "jobs"]) == 0
    )
    [(args, options)] = served
    assert options["host"] == "127.0.0.1" and options["port"] == 9123
    assert options["proxy_headers"] is False
    client = local_client(args[0])
    assert client.get("/api/overview").status_code == 200
    assert client.get("/api/session").json()["verbs"] == ["jobs"]
