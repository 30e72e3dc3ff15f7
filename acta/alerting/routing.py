"""Alerting configuration of an application: channels, routes, intervals, validation.

``app.alerting`` declares named channels and the routes that send alerts to them; sys.alerts
reads it in whatever worker runs it. With no route declared every channel gets every alert;
once routes exist, an alert goes to the channels of the routes that match it (its job name,
by exact name or ``fnmatch`` pattern, and its severity).

A route may name a channel declared later, so routes are checked when a worker starts
(``validate``): ``validation`` says what an unknown channel name does then: ``fail`` (a
ConfigurationError, the default), ``warn`` (logged; the route is skipped) or ``off``.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from weakref import WeakKeyDictionary

from acta.alerting.channels import (
    Channel,
    WebhookChannel,
    callable_channel,
    channel_name,
    logging_channel,
    webhook_channel,
)
from acta.alerting.notice import Notice
from acta.duration import parse_duration
from acta.errors import ConfigurationError, ValidationError
from acta.model.codes import AlertSeverity
from acta.registry import Registry

log = logging.getLogger("acta.alerts")

VALIDATION = ("off", "warn", "fail")
DEFAULT_REMIND = timedelta(days=1)
DEFAULT_CHECK = timedelta(minutes=1)
_SEVERITIES = {s.label for s in AlertSeverity}


@dataclass(frozen=True, slots=True)
class Route:
    """Send alerts of matching jobs and severities to one channel."""

    channel: str
    jobs: tuple[str, ...] = ()
    """Job names or fnmatch patterns (empty: every job, manual alerts included)."""
    severities: tuple[str, ...] = ()
    """Severity names (empty: every severity)."""

    def matches(self, notice: Notice) -> bool:
        if self.severities and notice.severity not in self.severities:
            return False
        if not self.jobs:
            return True
        name = notice.job_name or ""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.jobs)


class Alerting:
    """The alerting declarations of one application (``app.alerting``)."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self.channels: dict[str, Channel] = {}
        self.routes: list[Route] = []
        self.remind_every = DEFAULT_REMIND
        self.check_every = DEFAULT_CHECK
        self.validation = "fail"
        self.enabled = False
        """Whether workers run sys.alerts: set by declaring a channel or by ``enable()``."""
        _CONFIGS[registry] = self

    # -- declaring ------------------------------------------------------------------------

    def configure(
        self,
        *,
        remind_every: str | float | timedelta | None = None,
        check_every: str | float | timedelta | None = None,
        validation: str | None = None,
    ) -> Alerting:
        """Reminder interval of open incidents (default one day), how often sys.alerts
        looks (default one minute), and route validation at start (off, warn, fail)."""
        if validation is not None:
            if validation not in VALIDATION:
                raise ValidationError("validation", f"got {validation!r}", "off, warn or fail")
            self.validation = validation
        if remind_every is not None:
            self.remind_every = parse_duration(remind_every, field="remind_every")
        if check_every is not None:
            self.check_every = parse_duration(check_every, field="check_every")
        return self

    def enable(self) -> Alerting:
        """Run sys.alerts (resolving incidents on success) even with no channel declared."""
        self.enabled = True
        return self

    def callable(self, name: str, fn: Callable[[Notice], Any]) -> Channel:
        """A channel that calls ``fn(notice)`` (sync or async) inside sys.alerts."""
        return self._add(callable_channel(name, fn))

    def logging(self, name: str, *, logger: str = "acta.alerts", level: str = "warning") -> Channel:
        """A channel that logs ``notice.text`` to ``logger`` at ``level``."""
        return self._add(logging_channel(name, logger, level))

    def webhook(self, name: str, url: str, **options: Any) -> Channel:
        """A channel that POSTs each notice as JSON to ``url`` from a retried job. Options:
        headers, timeout (default 10 s), max_attempts (default 8), backoff ("5s..10m")."""
        channel = webhook_channel(name, url, **options)
        if channel.name in self.channels:  # checked before the definition is registered
            raise ConfigurationError(f"alert channel {channel.name!r} is declared twice")
        self._registry.add(channel.definition)
        return self._add(channel)

    def _add(self, channel: Channel) -> Channel:
        if channel.name in self.channels and self.channels[channel.name] is not channel:
            raise ConfigurationError(f"alert channel {channel.name!r} is declared twice")
        self.channels[channel.name] = channel
        self.enabled = True
        return channel

    def route(
        self,
        channel: str,
        *,
        jobs: Iterable[str] | None = None,
        severities: Iterable[str] | None = None,
    ) -> Route:
        """Send alerts of ``jobs`` (names or patterns) at ``severities`` to ``channel``."""
        name = channel_name(channel)
        patterns = _strings(jobs, "jobs")
        levels = _strings(severities, "severities")
        unknown = [s for s in levels if s not in _SEVERITIES]
        if unknown:
            raise ValidationError(
                "severities", f"got {unknown[0]!r}", f"one of {', '.join(sorted(_SEVERITIES))}"
            )
        route = Route(name, patterns, levels)
        self.routes.append(route)
        return route

    # -- checking and routing -------------------------------------------------------------

    def validate(self) -> list[str]:
        """Check routes against the declared channels, as ``validation`` says; returns the
        problems found (also when only warned about or ignored)."""
        problems = [
            f"alert route names channel {r.channel!r}, which is not declared "
            f"(declared: {', '.join(sorted(self.channels)) or 'none'})"
            for r in self.routes
            if r.channel not in self.channels
        ]
        if problems and self.validation == "fail":
            raise ConfigurationError(problems[0])
        if problems and self.validation == "warn":
            for problem in problems:
                log.warning("%s; the route is skipped", problem)
        return problems

    def channels_for(self, notice: Notice) -> list[str]:
        """The declared channels ``notice`` goes to, by name."""
        if not self.routes:
            return sorted(self.channels)
        return sorted(
            {r.channel for r in self.routes if r.channel in self.channels and r.matches(notice)}
        )

    @property
    def webhooks(self) -> Mapping[str, WebhookChannel]:
        return {n: c for n, c in self.channels.items() if isinstance(c, WebhookChannel)}


def _strings(values: Iterable[str] | None, field: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = (values,)
    out = tuple(values)
    if not all(isinstance(v, str) and v for v in out):
        raise ValidationError(field, f"got {out!r}", "non-empty strings")
    return out


_CONFIGS: WeakKeyDictionary[Registry, Alerting] = WeakKeyDictionary()


def alerting_of(registry: Registry) -> Alerting | None:
    """The alerting declarations of the application that owns ``registry`` (sys.alerts finds
    them through the registry its worker was built with)."""
    return _CONFIGS.get(registry)
