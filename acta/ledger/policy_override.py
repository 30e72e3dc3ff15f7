"""Policy override verbs: read a namespace's overrides (workers, every heartbeat) and change
one definition's by compare-and-set on its version (operators), with a policy-overridden event
in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from acta.errors import ConflictError, UnknownJobError
from acta.ledger.doubt import event_probe
from acta.ledger.events import event_params
from acta.model.codes import EventCode
from acta.provider.verb import Op, Verb, execute, fetch_all, fetch_one


def _policy(value: Any) -> dict[str, Any]:
    """A stored override: JSON text on SQLite, already decoded jsonb on PostgreSQL."""
    if value is None:
        return {}
    return dict(json.loads(value) if isinstance(value, str) else value)


def overrides_of(namespace_id: int) -> Verb[dict[str, dict[str, Any]]]:
    """Every override of a namespace, by job name (empty overrides left out)."""
    rows = yield fetch_all("policy_overrides_of", {"namespace_id": namespace_id})
    found = {row["name"]: _policy(row["policy"]) for row in rows}
    return {name: policy for name, policy in found.items() if policy}


def override_of(namespace: str, job_name: str) -> Verb[tuple[dict[str, Any], int]]:
    """One definition's override and its version (0: none yet); UnknownJobError if the
    ledger does not know the job name in that namespace."""
    row = yield fetch_one("policy_override_of", {"namespace": namespace, "job_name": job_name})
    if row is None:
        raise UnknownJobError(f"no job {job_name!r} in namespace {namespace!r}")
    return _policy(row["policy"]), int(row["version"])


def change(
    namespace: str,
    job_name: str,
    changes: Mapping[str, Any],
    cleared: Sequence[str],
    *,
    expected_version: int,
    actor: str,
    reason: str,
    now: datetime | None,
) -> Verb[tuple[tuple[dict[str, Any], int], Op | None]]:
    """Set ``changes`` (stored keys) and drop ``cleared`` keys of the job's override; returns
    the override now and its version; with the probe of its event, for
    ``acta.ledger.doubt.once`` (a retry after a lost COMMIT reply answers what it wrote)."""
    row = yield fetch_one("policy_override_of", {"namespace": namespace, "job_name": job_name})
    if row is None:
        raise UnknownJobError(f"no job {job_name!r} in namespace {namespace!r}")
    current, version = _policy(row["policy"]), int(row["version"])
    if version != expected_version:
        raise ConflictError(
            f"the policy override of {job_name!r} is at version {version}, not "
            f"{expected_version}: read it again (0 means none yet) and decide on what it is now"
        )
    policy = {k: v for k, v in current.items() if k not in cleared}
    policy.update(changes)
    params = {
        "definition_id": row["definition_id"],
        "policy": json.dumps(policy, sort_keys=True),
        "actor": actor,
        "reason": reason,
        "now": now,
        "version": version,
    }
    written = yield execute(
        "policy_override_insert" if version == 0 else "policy_override_update", params
    )
    if not written:
        raise ConflictError(f"the policy override of {job_name!r} changed meanwhile; read it again")
    said = ", ".join(
        [
            *(f"{k}={json.dumps(v)}" for k, v in sorted(changes.items())),
            *(f"{k} cleared" for k in sorted(cleared)),
        ]
    )
    if "priority" in changes:
        # The waiting jobs move with it, in this transaction; the one event below records the
        # count rather than an event per job (an override can touch a whole backlog).
        moved = yield execute(
            "policy_override_reprioritise",
            {"definition_id": row["definition_id"], "priority": changes["priority"]},
        )
        said += f" ({moved} waiting jobs re-prioritised)"
    event = yield fetch_one(
        "insert_event_id",
        event_params(
            now,
            row["namespace_id"],
            None,
            None,
            EventCode.POLICY_OVERRIDDEN,
            message=f"{job_name}: {said} by {actor}: {reason}",
            detail=params["policy"],
            actor=actor,
        ),
    )
    return (policy, version + 1), event_probe(event["id"], int(EventCode.POLICY_OVERRIDDEN))
