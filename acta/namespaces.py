"""Namespaces: who owns and runs the work (``app.namespaces``, also ``app.ops.namespaces``).

A namespace owns definitions and the workers that drain them. Operators list namespaces,
suspend and resume them, and keep version-checked tags and metadata on them (a team, an
on-call channel). Suspending a namespace is the repair verb that pauses its claims
(``app.repairs.pause_namespace``): the same row, the same claims-paused event; the two names
are one operation. Running jobs finish; claims stop at the commit that follows. Each change
bumps the namespace's version.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acta.labels import check_version, metadata_json, tags_json
from acta.ledger import tenant as verbs
from acta.ledger.facade import Ledger
from acta.names import validate_namespace
from acta.provider.verb import Verb
from acta.repair import DEFAULT_ACTOR, Repairs
from acta.repair_checks import check_who


@dataclass(frozen=True, slots=True)
class Namespace:
    """One namespace (``namespaces_view`` shows the same)."""

    name: str
    suspended: bool
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    version: int
    created_at: datetime
    definitions: int
    workers_running: int
    open_jobs: int


NamespaceList = list[Namespace]


def _namespace(row: Mapping[str, Any]) -> Namespace:
    return Namespace(
        name=row["namespace"],
        suspended=bool(row["suspended"]),
        tags=tuple(json.loads(row["tags"])),
        metadata=dict(json.loads(row["metadata"])),
        version=int(row["version"]),
        created_at=row["created_at"],
        definitions=int(row["definitions"]),
        workers_running=int(row["workers_running"]),
        open_jobs=int(row["open_jobs"]),
    )


class Namespaces:
    """Namespace verbs over the ledger ``ledger()`` returns; ``namespace`` is the default."""

    def __init__(self, ledger: Callable[[], Ledger], repairs: Repairs, namespace: str) -> None:
        self._ledger = ledger
        self._repairs = repairs
        self.namespace = namespace

    def _name(self, name: str | None) -> str:
        return self.namespace if name is None else validate_namespace(name)

    def list(self) -> NamespaceList:
        """Every namespace in the ledger, by name."""
        rows = self._ledger().run(lambda: verbs.namespaces(None), name="read")
        return [_namespace(r) for r in rows]

    async def list_async(self) -> NamespaceList:
        rows = await self._ledger().run_async(lambda: verbs.namespaces(None), name="read")
        return [_namespace(r) for r in rows]

    def get(self, name: str | None = None) -> Namespace | None:
        """One namespace (default: the application's), or None if the ledger has no such."""
        checked = self._name(name)
        rows = self._ledger().run(lambda: verbs.namespaces(checked), name="read")
        return _namespace(rows[0]) if rows else None

    async def get_async(self, name: str | None = None) -> Namespace | None:
        checked = self._name(name)
        rows = await self._ledger().run_async(lambda: verbs.namespaces(checked), name="read")
        return _namespace(rows[0]) if rows else None

    def suspend(
        self,
        name: str | None = None,
        *,
        reason: str = "suspended by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> bool:
        """Stop every claim in the namespace (``repairs.pause_namespace``); False when it was
        suspended already."""
        return self._repairs.pause_namespace(name, reason=reason, actor=actor)

    async def suspend_async(
        self,
        name: str | None = None,
        *,
        reason: str = "suspended by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> bool:
        return await self._repairs.pause_namespace_async(name, reason=reason, actor=actor)

    def resume(
        self,
        name: str | None = None,
        *,
        reason: str = "resumed by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> bool:
        """Claim the namespace's jobs again; False when it was not suspended."""
        return self._repairs.resume_namespace(name, reason=reason, actor=actor)

    async def resume_async(
        self,
        name: str | None = None,
        *,
        reason: str = "resumed by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> bool:
        return await self._repairs.resume_namespace_async(name, reason=reason, actor=actor)

    def update(
        self,
        name: str | None = None,
        *,
        expected_version: int,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        reason: str = "updated by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> int:
        """Replace the namespace's tags and/or metadata (None keeps them) if it is still at
        ``expected_version``; returns the new version (ConflictError when stale)."""
        make = self._update(name, expected_version, tags, metadata, reason, actor)
        return self._ledger().run(make, name="namespace")

    async def update_async(
        self,
        name: str | None = None,
        *,
        expected_version: int,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        reason: str = "updated by an operator",
        actor: str = DEFAULT_ACTOR,
    ) -> int:
        make = self._update(name, expected_version, tags, metadata, reason, actor)
        return await self._ledger().run_async(make, name="namespace")

    def _update(
        self,
        name: str | None,
        expected: int,
        tags: Iterable[str] | None,
        metadata: Mapping[str, Any] | None,
        reason: str,
        actor: str,
    ) -> Callable[[], Verb[int]]:
        checked, who, version = self._name(name), check_who(actor, reason), check_version(expected)
        tag_text = None if tags is None else tags_json(tags)
        meta_text = None if metadata is None else metadata_json(metadata)
        now = self._ledger().now()
        return lambda: verbs.update_namespace(checked, tag_text, meta_text, version, who, now)
