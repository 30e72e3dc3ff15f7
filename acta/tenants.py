"""Tenants: who the work is about (``app.tenants``, also ``app.ops.tenants``), sync and async.

A tenant is registered once under an opaque business key (a customer id, an account number)
and named at enqueue with ``tenant=``; the job row points at it, its children inherit it, and
jobs_view and events_view show its key. Enqueueing under a key no one registered raises
UnknownTenantError: a typo must not create a tenant nobody manages. Suspending a tenant makes
the ledger refuse its new enqueues at their commit (TenantSuspendedError); jobs already
admitted keep running, and their children still take the tenant. A tenant is a query, audit and
runtime dimension, not a security or isolation boundary.

Every verb checks its arguments first (a typed error, nothing written), runs in one
transaction, writes an event naming the verb, the actor and the reason, and raises
ConflictError when a version the caller names is stale.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from acta.errors import ValidationError
from acta.labels import check_version, metadata_json, tags_json
from acta.ledger import tenant as verbs
from acta.ledger.facade import Ledger
from acta.names import validate_key
from acta.policy.job import KEY_MAX
from acta.provider.verb import Verb
from acta.repair_checks import check_who

T = TypeVar("T")
DEFAULT_ACTOR = "api"


@dataclass(frozen=True, slots=True)
class Tenant:
    """One registered tenant (``tenants_view`` shows the same)."""

    key: str
    suspended: bool
    suspended_at: datetime | None
    suspended_by: str | None
    suspend_reason: str | None
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    version: int
    created_at: datetime
    updated_at: datetime
    open_jobs: int
    """Its jobs that have not finished yet."""


TenantList = list[Tenant]
_Rows = list[dict[str, Any]]


def _tenant(row: Mapping[str, Any]) -> Tenant:
    return Tenant(
        key=row["tenant"],
        suspended=bool(row["suspended"]),
        suspended_at=row["suspended_at"],
        suspended_by=row["suspended_by"],
        suspend_reason=row["suspend_reason"],
        tags=tuple(json.loads(row["tags"])),
        metadata=dict(json.loads(row["metadata"])),
        version=int(row["version"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        open_jobs=int(row["open_jobs"]),
    )


def check_tenant_key(key: object) -> str:
    """A tenant key: 1 to 200 characters, no control or invisible characters, no edge spaces."""
    return validate_key(key, field="tenant", max_length=KEY_MAX)  # type: ignore[arg-type]


class Tenants:
    """Tenant verbs over the ledger ``ledger()`` returns."""

    def __init__(self, ledger: Callable[[], Ledger]) -> None:
        self._ledger = ledger

    def _run(self, make: Callable[[], Verb[T]], name: str) -> T:
        return self._ledger().run(make, name=name)

    async def _run_async(self, make: Callable[[], Verb[T]], name: str) -> T:
        return await self._ledger().run_async(make, name=name)

    def _now(self) -> datetime | None:
        return self._ledger().now()

    # -- register and read ----------------------------------------------------------------

    def register(
        self,
        key: str,
        *,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
        reason: str = "registered",
        actor: str = DEFAULT_ACTOR,
    ) -> Tenant:
        """Register ``key`` once; registering it again returns the stored tenant unchanged
        (change tags or metadata with ``update``)."""
        return self._run(self._register(key, tags, metadata, reason, actor), "tenant")[0]

    async def register_async(
        self,
        key: str,
        *,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
        reason: str = "registered",
        actor: str = DEFAULT_ACTOR,
    ) -> Tenant:
        make = self._register(key, tags, metadata, reason, actor)
        return (await self._run_async(make, "tenant"))[0]

    def _register(
        self,
        key: str,
        tags: Iterable[str],
        metadata: Mapping[str, Any] | None,
        reason: str,
        actor: str,
    ) -> Callable[[], Verb[tuple[Tenant, bool]]]:
        checked, who = check_tenant_key(key), check_who(actor, reason)
        tag_text, meta_text, now = tags_json(tags), metadata_json(metadata or {}), self._now()

        def make() -> Verb[tuple[Tenant, bool]]:
            row, created = yield from verbs.register(checked, tag_text, meta_text, who, now)
            return _tenant(row), created

        return make

    def get(self, key: str) -> Tenant | None:
        """The tenant registered under ``key``, or None."""
        found = self.list(key=key)
        return found[0] if found else None

    async def get_async(self, key: str) -> Tenant | None:
        found = await self.list_async(key=key)
        return found[0] if found else None

    def list(self, *, key: str | None = None, suspended: bool | None = None) -> TenantList:
        """Every tenant by key (one with ``key``; only suspended ones with suspended=True)."""
        make = self._list(key, suspended)
        return [_tenant(r) for r in self._run(make, "read")]

    async def list_async(
        self, *, key: str | None = None, suspended: bool | None = None
    ) -> TenantList:
        make = self._list(key, suspended)
        return [_tenant(r) for r in await self._run_async(make, "read")]

    @staticmethod
    def _list(key: str | None, suspended: bool | None) -> Callable[[], Verb[_Rows]]:
        checked = None if key is None else check_tenant_key(key)
        if suspended not in (None, True, False):
            raise ValidationError("suspended", f"got {suspended!r:.80}", "True, False or None")
        return lambda: verbs.tenants(checked, suspended)

    # -- lifecycle ------------------------------------------------------------------------

    def suspend(
        self,
        key: str,
        *,
        reason: str = "suspended by an operator",
        actor: str = DEFAULT_ACTOR,
        expected_version: int | None = None,
    ) -> bool:
        """Refuse the tenant's new enqueues from this commit on; admitted jobs keep running.
        False when it was suspended already. ConflictError when ``expected_version`` is stale."""
        return self._run(self._suspend(key, True, reason, actor, expected_version), "tenant")

    async def suspend_async(
        self,
        key: str,
        *,
        reason: str = "suspended by an operator",
        actor: str = DEFAULT_ACTOR,
        expected_version: int | None = None,
    ) -> bool:
        make = self._suspend(key, True, reason, actor, expected_version)
        return await self._run_async(make, "tenant")

    def resume(
        self,
        key: str,
        *,
        reason: str = "resumed by an operator",
        actor: str = DEFAULT_ACTOR,
        expected_version: int | None = None,
    ) -> bool:
        """Admit the tenant's enqueues again. False when it was not suspended."""
        return self._run(self._suspend(key, False, reason, actor, expected_version), "tenant")

    async def resume_async(
        self,
        key: str,
        *,
        reason: str = "resumed by an operator",
        actor: str = DEFAULT_ACTOR,
        expected_version: int | None = None,
    ) -> bool:
        make = self._suspend(key, False, reason, actor, expected_version)
        return await self._run_async(make, "tenant")

    def _suspend(
        self, key: str, suspended: bool, reason: str, actor: str, expected: int | None
    ) -> Callable[[], Verb[bool]]:
        checked, who, now = check_tenant_key(key), check_who(actor, reason), self._now()
        version = None if expected is None else check_version(expected)

        def make() -> Verb[bool]:
            changed, _ = yield from verbs.suspend(checked, suspended, version, who, now)
            return changed

        return make

    def update(
        self,
        key: str,
        *,
        expected_version: int,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        reason: str = "updated by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> int:
        """Replace the tenant's tags and/or metadata (None keeps them) if it is still at
        ``expected_version``; returns the new version (ConflictError when stale)."""
        make = self._update(key, expected_version, tags, metadata, reason, actor)
        return self._run(make, "tenant")

    async def update_async(
        self,
        key: str,
        *,
        expected_version: int,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        reason: str = "updated by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> int:
        make = self._update(key, expected_version, tags, metadata, reason, actor)
        return await self._run_async(make, "tenant")

    def _update(
        self,
        key: str,
        expected: int,
        tags: Iterable[str] | None,
        metadata: Mapping[str, Any] | None,
        reason: str,
        actor: str,
    ) -> Callable[[], Verb[int]]:
        checked, who, version = (
            check_tenant_key(key),
            check_who(actor, reason),
            check_version(expected),
        )
        tag_text = None if tags is None else tags_json(tags)
        meta_text = None if metadata is None else metadata_json(metadata)
        now = self._now()
        return lambda: verbs.update_tenant(checked, tag_text, meta_text, version, who, now)
