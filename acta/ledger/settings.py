"""Setting verbs: read durable named settings, and write them by compare-and-set.

A write names the version it read (0: the setting must not exist yet), runs in one
transaction with a ``setting-changed`` event, and raises ConflictError when the row is not at
that version any more, having changed nothing. A write answers with the probe of its event,
and the caller runs it with ``acta.ledger.doubt.once``: a write whose COMMIT reply was lost
and that the provider runs again answers the version it wrote instead of finding the row one
version on and refusing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from acta.errors import ConflictError, UnknownJobError
from acta.ledger.doubt import event_probe
from acta.ledger.events import event_params
from acta.model.codes import EventCode, SettingScope
from acta.provider.verb import Op, Verb, execute, fetch_all, fetch_one

Row = Mapping[str, Any]


def settings(namespace: str | None, name: str | None) -> Verb[list[Row]]:
    """Every setting visible from ``namespace`` (all of them when None), of one ``name`` or all."""
    rows = yield fetch_all("settings_list", {"namespace": namespace, "name": name})
    return [dict(r) for r in rows]


def _place(
    scope: SettingScope, namespace: str, job_name: str | None
) -> Verb[tuple[int | None, int | None]]:
    if scope is SettingScope.GLOBAL:
        return None, None
    row = yield fetch_one("setting_place", {"namespace": namespace, "job_name": job_name})
    namespace_id = row["namespace_id"] if row else None
    definition_id = row["definition_id"] if row else None
    if scope is SettingScope.DEFINITION and definition_id is None:
        raise UnknownJobError(
            f"no job {job_name!r} in namespace {namespace!r}: a definition setting needs a job "
            "name the ledger knows (a worker registered it, or a producer enqueued it)"
        )
    if namespace_id is None:
        raise UnknownJobError(f"namespace {namespace!r} is not in the ledger yet")
    return namespace_id, definition_id if scope is SettingScope.DEFINITION else None


def write(
    scope: SettingScope,
    namespace: str,
    job_name: str | None,
    name: str,
    value: str | None,
    *,
    expected_version: int,
    actor: str,
    reason: str,
    now: datetime | None,
) -> Verb[tuple[int, Op | None]]:
    """Set (``value`` JSON text) or delete (``value`` None) one setting; returns its new
    version (0 once deleted)."""
    namespace_id, definition_id = yield from _place(scope, namespace, job_name)
    where = {
        "name": name,
        "scope": int(scope),
        "namespace_id": namespace_id,
        "definition_id": definition_id,
    }
    row = yield fetch_one("setting_at", where)
    current = 0 if row is None else int(row["version"])
    place = _describe(scope, namespace, job_name)
    if current != expected_version:
        raise ConflictError(
            f"setting {name!r} {place} is at version {current}, not {expected_version}: read it "
            "again (0 means it does not exist) and decide on what it is now"
        )
    params = {"value": value, "actor": actor, "reason": reason, "now": now}
    if row is None and value is None:
        raise ConflictError(f"setting {name!r} {place} does not exist: nothing to delete")
    if row is None:
        written = yield execute("setting_insert", {**where, **params})
        version = 1
    elif value is None:
        written = yield execute("setting_delete", {"id": row["id"], "version": current})
        version = 0
    else:
        written = yield execute("setting_update", {**params, "id": row["id"], "version": current})
        version = current + 1
    if not written:
        raise ConflictError(f"setting {name!r} {place} changed meanwhile; read it again")
    verb = "deleted" if value is None else "set"
    event = yield fetch_one(
        "insert_event_id",
        event_params(
            now,
            namespace_id,
            None,
            None,
            EventCode.SETTING_CHANGED,
            message=f"{verb} {name} {place} by {actor}: {reason}",
            detail=value,
            actor=actor,
        ),
    )
    return version, event_probe(event["id"], int(EventCode.SETTING_CHANGED))


def _describe(scope: SettingScope, namespace: str, job_name: str | None) -> str:
    if scope is SettingScope.GLOBAL:
        return "(global)"
    if scope is SettingScope.NAMESPACE:
        return f"(namespace {namespace})"
    return f"(job {job_name} in namespace {namespace})"
