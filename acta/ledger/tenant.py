"""Tenant and namespace verbs: register, list, suspend, resume, and compare-and-set changes.

Every change runs in one transaction with its event (the actor in its column, the reason in
the detail) and bumps
the row's version; a caller that names the version it read gets ConflictError, having changed
nothing, when the row moved on. Tenants belong to no namespace (a tenant is who the work is
about, whoever runs it), so their events carry no namespace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from acta.errors import ConflictError, UnknownJobError, UnknownTenantError
from acta.ledger.events import Who, event_params
from acta.model.codes import EventCode, Reason
from acta.provider.verb import Verb, execute, fetch_all, fetch_one

Row = dict[str, Any]


def _event(
    namespace_id: int | None,
    code: EventCode,
    message: str,
    detail: Mapping[str, object],
    who: Who,
) -> dict[str, object]:
    return event_params(
        None,
        namespace_id,
        None,
        None,
        code,
        reason=int(Reason.OPERATOR),
        message=message,
        detail=json.dumps(detail, sort_keys=True, default=str),
        actor=who.actor,
    )


def _with_now(params: dict[str, object], now: datetime | None) -> dict[str, object]:
    params["now"] = now
    return params


def tenants(key: str | None, suspended: bool | None) -> Verb[list[Row]]:
    """Tenants (one key's, or all), suspended ones only when ``suspended`` is True."""
    rows = yield fetch_all("tenant_list", {"tenant_key": key, "suspended": suspended})
    return [dict(r) for r in rows]


def register(
    key: str, tags: str, metadata: str, who: Who, now: datetime | None
) -> Verb[tuple[Row, bool]]:
    """Register ``key`` (tags and metadata as JSON text); returns its row and whether this
    call created it. A key registered already is returned as stored, unchanged."""
    row = yield fetch_one(
        "tenant_insert", {"tenant_key": key, "tags": tags, "metadata": metadata, "now": now}
    )
    created = row is not None
    if created:
        detail = {**json.loads(who.detail("register")), "tenant": key}
        detail.update(tags=json.loads(tags), metadata=json.loads(metadata))
        yield execute(
            "insert_event",
            _with_now(_event(None, EventCode.TENANT_REGISTERED, f"tenant {key}", detail, who), now),
        )
    found = yield from tenants(key, None)
    return found[0], created


def _tenant(key: str) -> Verb[Row]:
    row = yield fetch_one("tenant_row", {"tenant_key": key})
    if row is None:
        raise UnknownTenantError(key)
    return dict(row)


def _check_version(what: str, row: Row, expected: int | None) -> int:
    current = int(row["version"])
    if expected is not None and expected != current:
        raise ConflictError(
            f"{what} is at version {current}, not {expected}: read it again and decide on what "
            "it is now"
        )
    return current


def suspend(
    key: str, suspended: bool, expected: int | None, who: Who, now: datetime | None
) -> Verb[tuple[bool, int]]:
    """Suspend (or resume) a tenant; returns whether it changed and its version now. A tenant
    already in that state is left as it is (no event)."""
    row = yield from _tenant(key)
    version = _check_version(f"tenant {key!r}", row, expected)
    if bool(row["suspended"]) == suspended:
        return False, version
    params = {
        "tenant_id": row["tenant_id"],
        "version": version,
        "suspended": suspended,
        "actor": who.actor,
        "reason": who.reason,
        "now": now,
    }
    changed = yield execute("tenant_set_suspended", params)
    if not changed:  # only a concurrent writer between our read and this update gets here
        raise ConflictError(f"tenant {key!r} changed while being suspended; read it again")
    code = EventCode.TENANT_SUSPENDED if suspended else EventCode.TENANT_RESUMED
    verb = "suspend" if suspended else "resume"
    detail = {**json.loads(who.detail(verb)), "tenant": key, "version": version + 1}
    yield execute("insert_event", _with_now(_event(None, code, f"tenant {key}", detail, who), now))
    return True, version + 1


def _labels(row: Row, tags: str | None, metadata: str | None) -> tuple[str, str, dict[str, object]]:
    """The tags and metadata to store, and the event detail naming what changed."""
    new_tags = row["tags"] if tags is None else tags
    new_metadata = row["metadata"] if metadata is None else metadata
    change: dict[str, object] = {}
    if tags is not None:
        change["tags"] = {"old": json.loads(row["tags"]), "new": json.loads(tags)}
    if metadata is not None:
        change["metadata"] = {"old": json.loads(row["metadata"]), "new": json.loads(metadata)}
    return new_tags, new_metadata, change


def update_tenant(
    key: str, tags: str | None, metadata: str | None, expected: int, who: Who, now: datetime | None
) -> Verb[int]:
    """Replace a tenant's tags and/or metadata (JSON text; None keeps it) at version
    ``expected``; returns the new version."""
    row = yield from _tenant(key)
    version = _check_version(f"tenant {key!r}", row, expected)
    new_tags, new_metadata, change = _labels(row, tags, metadata)
    params = {"tenant_id": row["tenant_id"], "version": version, "tags": new_tags}
    params.update(metadata=new_metadata, now=now)
    if not (yield execute("tenant_set_labels", params)):
        raise ConflictError(f"tenant {key!r} changed while being updated; read it again")
    detail = {**json.loads(who.detail("update")), "tenant": key, "version": version + 1, **change}
    yield execute(
        "insert_event",
        _with_now(_event(None, EventCode.TENANT_UPDATED, f"tenant {key}", detail, who), now),
    )
    return version + 1


def namespaces(name: str | None) -> Verb[list[Row]]:
    """Namespaces (one, or all) with their lifecycle and what runs in them."""
    rows = yield fetch_all("namespace_list", {"namespace": name})
    return [dict(r) for r in rows]


def update_namespace(
    name: str, tags: str | None, metadata: str | None, expected: int, who: Who, now: datetime | None
) -> Verb[int]:
    """Replace a namespace's tags and/or metadata at version ``expected``; the new version."""
    row = yield fetch_one("namespace_row", {"namespace": name})
    if row is None:
        raise UnknownJobError(f"no namespace {name!r} in this ledger")
    row = dict(row)
    version = _check_version(f"namespace {name!r}", row, expected)
    new_tags, new_metadata, change = _labels(row, tags, metadata)
    params = {"namespace_id": row["namespace_id"], "version": version, "tags": new_tags}
    params["metadata"] = new_metadata
    if not (yield execute("namespace_set_labels", params)):
        raise ConflictError(f"namespace {name!r} changed while being updated; read it again")
    detail = {**json.loads(who.detail("update")), "namespace": name, "version": version + 1}
    detail.update(change)
    event = _event(
        int(row["namespace_id"]), EventCode.NAMESPACE_UPDATED, f"namespace {name}", detail, who
    )
    yield execute("insert_event", _with_now(event, now))
    return version + 1
