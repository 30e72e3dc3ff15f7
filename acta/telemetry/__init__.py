"""Metrics and traces through OpenTelemetry's API, when it is installed (``acta-jobs[otel]``).

acta never installs an exporter: it asks the OpenTelemetry API for a meter and a tracer named
``acta`` and records on them. Whatever SDK the application configured decides where that goes;
with the API installed and no SDK configured, OpenTelemetry's own no-op providers swallow it.

Without the API installed, ``resolve`` answers None and the rest of acta checks for None before
each hook: nothing is imported, nothing is recorded, and no job pays more than that check. This
module must therefore never import ``opentelemetry`` at its top; ``Telemetry`` (which does) is
loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acta.about import install_hint
from acta.errors import ConfigurationError

if TYPE_CHECKING:
    from acta.telemetry.observer import Telemetry

__all__ = ["Telemetry", "available", "resolve"]

_shared: list[Any] = []
"""The process-wide Telemetry over the global providers, made on first need (one, so every
application of a process shares one set of instruments)."""


def available() -> bool:
    """Whether the OpenTelemetry API can be imported here."""
    try:
        import opentelemetry.metrics
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return False
    return True


def resolve(option: object) -> Telemetry | None:
    """What an application's ``telemetry=`` option means.

    None (the default): the shared Telemetry over OpenTelemetry's global providers if the API
    is installed, else None. False: off. True: the shared one, and an error if the API is
    missing. A ``Telemetry``: that one (own providers, the backlog gauge)."""
    if option is False:
        return None
    if option is None or option is True:
        if not available():
            if option is True:
                raise ConfigurationError(
                    "telemetry=True needs the OpenTelemetry API, the otel extra "
                    f"({install_hint('otel')}), or pass telemetry=None to record only when "
                    "it is installed"
                )
            return None
        if not _shared:
            from acta.telemetry.observer import Telemetry

            _shared.append(Telemetry())
        shared: Telemetry = _shared[0]
        return shared
    from acta.telemetry.observer import Telemetry

    if isinstance(option, Telemetry):
        return option
    raise ConfigurationError(
        f"telemetry must be None, True, False or an acta.telemetry.Telemetry; "
        f"got {type(option).__name__}"
    )


def __getattr__(name: str) -> Any:
    # ``from acta.telemetry import Telemetry`` works once the API is installed, without making
    # ``import acta.telemetry`` need it.
    if name == "Telemetry":
        from acta.telemetry.observer import Telemetry

        return Telemetry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
