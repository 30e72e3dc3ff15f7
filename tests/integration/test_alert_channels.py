"""The webhook channel, against a real HTTP server on 127.0.0.1 (http.server in a thread):
each notice becomes a job of the channel's own definition that POSTs it as JSON, retried with
the job's backoff while the endpoint answers an error. A logging channel writes the notice's
line to its logger.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from acta import Acta
from acta_testing import Host


class Endpoint:
    """A webhook receiver that answers the next statuses in ``answers`` (then 204)."""

    def __init__(self) -> None:
        self.answers: list[int] = []
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers["Content-Length"])
                endpoint.bodies.append(json.loads(self.rfile.read(size)))
                endpoint.headers.append(dict(self.headers))
                status = endpoint.answers.pop(0) if endpoint.answers else 204
                self.send_response(status)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/acta"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    yield server
    server.close()


def test_a_webhook_posts_each_notice_from_a_retried_job(
    acta_app: Acta, acta_host: Host, endpoint: Endpoint
) -> None:
    acta_app.alerting.webhook(
        "ops-hook", endpoint.url, headers={"Authorization": "Bearer t0ken"}, backoff="5s"
    )

    @acta_app.job("settle-payouts", max_attempts=1)
    def payouts() -> None:
        raise RuntimeError("bank API answered 503")

    payouts.enqueue()
    acta_host.run_until_idle()
    endpoint.answers = [500]  # the first delivery fails
    acta_host.advance("1m")
    assert acta_host.tick() == "rearmed"  # sys.alerts enqueued the delivery; it failed, retries
    [hook] = acta_host.jobs(name="acta.alert-webhook.ops-hook")
    assert hook.status.label == "ready"  # a retry is due in 5 s
    acta_host.advance("5s")
    assert acta_host.tick() == "completed"
    assert len(endpoint.bodies) == 2
    body = endpoint.bodies[-1]
    assert body["state"] == "open" and body["kind"] == "failure"
    assert body["job_name"] == "settle-payouts" and body["occurrences"] == 1
    assert "bank API answered 503" in body["detail"]
    assert endpoint.headers[-1]["Authorization"] == "Bearer t0ken"
    assert endpoint.headers[-1]["Content-Type"] == "application/json"
    # The delivery job's own failure opened no incident (webhooks alert "off").
    assert [a.job_name for a in acta_app.alerts.list()] == ["settle-payouts"]


def test_a_logging_channel_writes_the_notice_line(
    acta_app: Acta, acta_host: Host, caplog: pytest.LogCaptureFixture
) -> None:
    acta_app.alerting.logging("ops-log", logger="billing.alerts", level="error")

    @acta_app.job("close-books", max_attempts=1)
    def close_books() -> None:
        raise RuntimeError("period locked")

    close_books.enqueue()
    acta_host.run_until_idle()
    acta_host.advance("1m")
    with caplog.at_level(logging.ERROR, logger="billing.alerts"):
        acta_host.tick()
    [record] = [r for r in caplog.records if r.name == "billing.alerts"]
    assert record.levelno == logging.ERROR
    assert record.getMessage().startswith(
        "[ALERT] critical: close-books failed: attempts-exhausted"
    )
