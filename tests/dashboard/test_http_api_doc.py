"""Runs the request/response examples of docs/reference/http-api.md against a real ledger.

Each example is a ``<!-- api: STATUS -->`` line, an ``http`` fence holding the request line
(``GET /api/jobs?status=failed``, placeholders ``{failed}``, ``{ready}``, ``{alert}`` for this
ledger's refs) and, for a POST, a blank line and a JSON body; then a ``json`` fence holding the
response. The test sends each request in page order (verbs get this session's CSRF token) and
checks the status and the response's shape: the same keys in every object, the same kind of
value in every field the page shows (lists compare their first items).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from acta import Acta
from acta.dashboard import create_dashboard
from acta_testing import Host
from tests.dashboard.conftest import local_client

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "http-api.md"
_EXAMPLE = re.compile(
    r"<!-- api: (\d{3}) -->\n```http\n(.*?)\n```\n+```json\n(.*?)\n```", re.DOTALL
)


def examples() -> list[tuple[int, str, str]]:
    found = [(int(s), req, resp) for s, req, resp in _EXAMPLE.findall(PAGE.read_text())]
    assert found, f"no examples in {PAGE}"
    return found


def same_shape(documented: Any, actual: Any, where: str = "$") -> None:
    if documented is None or actual is None:
        return  # a value absent on one side: the field is there, which the parent checked
    if isinstance(documented, dict):
        assert isinstance(actual, dict), f"{where}: documented an object, got {actual!r:.80}"
        assert set(documented) == set(actual), (
            f"{where}: keys {sorted(documented)} != {sorted(actual)}"
        )
        for key in documented:
            same_shape(documented[key], actual[key], f"{where}.{key}")
    elif isinstance(documented, list):
        assert isinstance(actual, list), f"{where}: documented a list, got {actual!r:.80}"
        if documented and actual:
            same_shape(documented[0], actual[0], f"{where}[0]")
    elif isinstance(documented, bool):
        assert isinstance(actual, bool), f"{where}: documented a boolean, got {actual!r:.80}"
    elif isinstance(documented, int | float):
        assert isinstance(actual, int | float) and not isinstance(actual, bool), where
    else:
        assert isinstance(actual, str), f"{where}: documented text, got {actual!r:.80}"


def test_every_documented_example_answers_as_documented(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("send-invoice")
    def send_invoice(number: int) -> str:
        return f"invoice {number} sent"

    @acta_app.job("sync-crm", max_attempts=1)
    def sync_crm(account: int) -> None:
        raise ConnectionError("the CRM did not answer")

    @acta_app.job("nightly-report", schedule="1h")
    def nightly_report() -> None:
        return None

    acta_app.tenants.register("acme", tags=["enterprise"], metadata={"plan": "gold"})
    acta_app.tenants.register("globex")
    send_invoice.enqueue(7, tags=["billing"], correlation_key="order-7")
    failed = sync_crm.enqueue(42, tenant="acme")
    acta_host.run_until_idle()
    ready = send_invoice.enqueue(8, delay="1h")
    acta_app.tenants.suspend("acme", reason="invoice overdue", actor="billing-ops")
    [alert] = acta_app.ops.alerts.list()
    values = {"failed": str(failed), "ready": str(ready), "alert": str(alert.alert_id)}
    client = local_client(
        create_dashboard(
            acta_app, verbs=["jobs", "bulk", "definitions", "alerts", "schedules", "tenants"]
        )
    )
    token = client.get("/api/session").json()["csrf"]
    dump = os.environ.get("ACTA_DOC_DUMP") is not None
    for status, request, response in examples():
        line, _, body = request.partition("\n\n")
        method, path = line.split(" ", 1)
        path = path.format(**values)
        if method == "GET":
            answer = client.get(path)
        else:
            headers = {"X-Acta-CSRF": token, "Origin": "http://localhost"}
            answer = client.post(path, json=json.loads(body or "{}"), headers=headers)
        if dump:
            print(method, path, answer.status_code, json.dumps(answer.json(), indent=2))
        assert answer.status_code == status, f"{method} {path}: {answer.text}"
        same_shape(json.loads(response), answer.json(), f"{method} {path}")


@pytest.mark.parametrize("value", [{"a": 1}, [1], "x", 1.5, True])
def test_the_shape_check_can_fail(value: Any) -> None:
    with pytest.raises(AssertionError):
        same_shape({"b": 1} if not isinstance(value, dict) else {"a": "text"}, value)
