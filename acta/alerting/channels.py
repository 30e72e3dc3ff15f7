"""Alert channels: where notices go. A channel is declared in code under a name, and routes
name it (``acta.alerting.routing``).

Three kinds: a Python callable (sync or async, given the ``Notice``), a ``logging`` logger,
and an HTTP webhook. A webhook does not post from sys.alerts itself: each notice becomes a job
of the channel's own definition (``acta.alert-webhook.NAME``), so a slow or failing endpoint is
retried with the job's backoff and never holds up the other channels; the job's timeline is
the delivery record. It posts with the standard library only (urllib).
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from acta.alerting.notice import Notice
from acta.definition import JobDefinition
from acta.duration import parse_duration
from acta.errors import ValidationError
from acta.policy.job import AlertProfile, JobPolicy

_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_NAME_RULE = "kebab-case: lowercase letters, digits and single dashes, 1 to 60 characters"
WEBHOOK_PREFIX = "acta.alert-webhook."
"""Webhook channels' job names: this prefix and the channel's name."""
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}

Notify = Callable[[Notice], "Awaitable[None] | None"]


def channel_name(name: object) -> str:
    """A channel's name, checked (it is also part of a webhook's job name)."""
    if not isinstance(name, str) or len(name) > 60 or not _NAME.fullmatch(name):
        raise ValidationError("channel", f"got {name!r}", _NAME_RULE)
    return name


@dataclass(frozen=True, slots=True)
class CallableChannel:
    """Calls ``fn(notice)`` inside the sys.alerts run; an async function is awaited."""

    name: str
    fn: Notify

    async def deliver(self, notice: Notice, enqueue: Enqueue) -> None:
        out = self.fn(notice)
        if inspect.isawaitable(out):
            await out


@dataclass(frozen=True, slots=True)
class LoggingChannel:
    """Writes ``notice.text`` to a ``logging`` logger at one level."""

    name: str
    logger: str = "acta.alerts"
    level: int = logging.WARNING

    async def deliver(self, notice: Notice, enqueue: Enqueue) -> None:
        logging.getLogger(self.logger).log(
            self.level, "%s", notice.text, extra={"acta_alert": notice.as_json()}
        )


Enqueue = Callable[[JobDefinition[Any, Any], dict[str, Any]], Awaitable[object]]
"""How a channel enqueues a job (the webhook's delivery)."""


@dataclass(frozen=True, slots=True)
class WebhookChannel:
    """POSTs the notice as JSON to ``url``, from a job of its own definition (retried)."""

    name: str
    url: str
    definition: JobDefinition[Any, Any] = field(compare=False)

    async def deliver(self, notice: Notice, enqueue: Enqueue) -> None:
        # Handing the notice to the ledger is this channel's whole delivery: the job posts it.
        await enqueue(self.definition, notice.as_json())


Channel = CallableChannel | LoggingChannel | WebhookChannel


def logging_channel(name: str, logger: str = "acta.alerts", level: str = "warning") -> Channel:
    if not isinstance(logger, str) or not logger:
        raise ValidationError("logger", f"got {logger!r}", "a logger name")
    if level not in _LEVELS:
        raise ValidationError("level", f"got {level!r}", f"one of {', '.join(_LEVELS)}")
    return LoggingChannel(channel_name(name), logger, _LEVELS[level])


def callable_channel(name: str, fn: object) -> Channel:
    if not callable(fn):
        raise ValidationError("fn", f"got {fn!r}", "a function taking the Notice")
    return CallableChannel(channel_name(name), fn)


def webhook_channel(
    name: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: str | float | timedelta = 10,
    max_attempts: int = 8,
    backoff: str = "5s..10m",
) -> WebhookChannel:
    """A webhook channel and the job definition that delivers its notices."""
    name = channel_name(name)
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValidationError("url", f"got {url!r}", "an http:// or https:// URL with a host")
    sent = dict(headers or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in sent.items()):
        raise ValidationError("headers", f"got {headers!r}", "a mapping of str to str")
    seconds = parse_duration(timeout, field="timeout").total_seconds()
    # Its own failures must not page through the channel that is failing: alerts off.
    policy = JobPolicy.build(
        max_attempts=max_attempts, backoff=backoff, audit="failures", alerts=AlertProfile.OFF
    )

    def post(notice: dict[str, Any]) -> int:
        """Deliver one notice; anything but a 2xx answer raises, and the job retries."""
        body = json.dumps(notice).encode()
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", **sent},
        )
        try:
            with urllib.request.urlopen(request, timeout=seconds) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{url} answered {exc.code} {exc.reason}") from None

    definition: JobDefinition[Any, Any] = JobDefinition(
        WEBHOOK_PREFIX + name, post, policy, input_type=dict[str, Any], result_type=int
    )
    return WebhookChannel(name, url, definition)
