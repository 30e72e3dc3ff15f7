"""What a dashboard is allowed to do, checked once when it is built.

The defaults are the safe ones: local-only, every mutating verb off. Turning the local-only
guard off without an authorization callable is refused here, at construction, before any
server binds a socket: a dashboard exposed by accident must not be possible.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from acta.errors import ConfigurationError, ValidationError
from acta.tenants import check_tenant_key

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Authorize = Callable[[Any], "str | None"]
"""Called with the Starlette request; returns the actor's name, or None to refuse it."""

VERB_FAMILIES: dict[str, tuple[str, ...]] = {
    "jobs": ("restart", "cancel", "reschedule", "signal", "resume", "amend"),
    "bulk": ("restart", "cancel", "reschedule", "purge"),
    "definitions": ("pause", "resume"),
    "alerts": ("acknowledge", "resolve"),
    "schedules": ("pause", "resume", "trigger"),
    "tenants": ("suspend", "resume"),
}
"""Mutating verbs by family; each family is enabled as a whole, or not at all."""

LOCAL_ACTOR = "dashboard@local"
"""The actor verbs are recorded under when no authorization callable names one."""


@dataclass(frozen=True, slots=True)
class DashboardConfig:
    """The checked settings of one dashboard."""

    local_only: bool
    trusted_proxies: tuple[Network, ...]
    authorize: Authorize | None
    verbs: frozenset[str]
    refresh_seconds: int
    tenant: str | None = None
    """The one tenant whose jobs the Jobs page lists and the job verbs may change; None: all."""

    def verb_enabled(self, family: str) -> bool:
        return family in self.verbs


def build_config(
    *,
    local_only: object,
    trusted_proxies: Iterable[str],
    authorize: Authorize | None,
    verbs: Iterable[str],
    refresh_seconds: object,
    tenant: object = None,
) -> DashboardConfig:
    """Check every setting; a bad one raises ConfigurationError naming it and what is allowed."""
    if not isinstance(local_only, bool):
        raise ConfigurationError(f"local_only: got {local_only!r}; allowed: True or False")
    if authorize is not None and not callable(authorize):
        raise ConfigurationError(
            f"authorize: got {authorize!r}; allowed: a callable taking the request and "
            "returning the actor's name, or None to refuse"
        )
    if not local_only and authorize is None:
        raise ConfigurationError(
            "local_only=False needs an authorize callable: without one anybody who reaches "
            "the port could read the ledger (and use enabled verbs); the dashboard refuses "
            "to start"
        )
    if isinstance(trusted_proxies, str):
        raise ConfigurationError(
            "trusted_proxies: got a string; allowed: a list of addresses or networks"
        )
    proxies: list[Network] = []
    for entry in trusted_proxies:
        try:
            proxies.append(ipaddress.ip_network(str(entry), strict=False))
        except ValueError:
            raise ConfigurationError(
                f"trusted_proxies: {entry!r} is not an IP address or network "
                "(allowed: e.g. '127.0.0.1' or '10.0.0.0/8')"
            ) from None
    if isinstance(verbs, str):
        raise ConfigurationError(f"verbs: got the string {verbs!r}; allowed: a list of families")
    chosen = frozenset(verbs)
    unknown = sorted(str(v) for v in chosen - VERB_FAMILIES.keys())
    if unknown:
        raise ConfigurationError(
            f"verbs: unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
            f"allowed: {', '.join(VERB_FAMILIES)}"
        )
    if (
        isinstance(refresh_seconds, bool)
        or not isinstance(refresh_seconds, int)
        or not 1 <= refresh_seconds <= 3600
    ):
        raise ConfigurationError(
            f"refresh_seconds: got {refresh_seconds!r}; allowed: an int from 1 to 3600"
        )
    if tenant is not None:
        try:
            check_tenant_key(tenant)
        except (ValidationError, TypeError):
            raise ConfigurationError(
                f"tenant: got {tenant!r:.80}; allowed: a tenant key, or None for every tenant"
            ) from None
    return DashboardConfig(
        local_only=local_only,
        trusted_proxies=tuple(proxies),
        authorize=authorize,
        verbs=chosen,
        refresh_seconds=refresh_seconds,
        tenant=None if tenant is None else str(tenant),
    )
