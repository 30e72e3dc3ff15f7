"""Live policy overrides: an operator's values that replace a definition's declared policy.

An override is stored as a small JSON object holding only the fields it changes (see
``FIELDS``), normalised here so that SQL can read its numbers too: ``max_attempts``,
``backoff`` (the expression), ``timeout_ms`` (null: no timeout), ``audit`` (the level's
code), ``retention_ms`` (null: kept forever), ``alerts`` (the profile) and ``priority``
(which the enqueue SQL reads too). ``normalize`` checks operator input with the same rules as
the declaration; ``apply`` gives the effective policy. Pure: no I/O.

Precedence, the same everywhere: a job's own value (an operator's amend; only
``max_attempts`` has one, applied over this module's result by ``acta.runtime.attempt``), else
the live override (``apply``, the one place Python computes it), else the declaration. SQL
states the definition's part once per dialect, in ``effective_policy_view``, which every read,
explain, dashboard, recovery and retention statement joins (conformance/test_policy_precedence
holds them to what the worker applies).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import Any, Final

from acta.backoff import Backoff
from acta.errors import InvalidPolicyError
from acta.model.codes import AuditLevel
from acta.policy.job import MAX_ATTEMPTS_LIMIT, JobPolicy, validate_retention

FIELDS: Final = (
    "max_attempts",
    "backoff",
    "timeout",
    "audit",
    "retention",
    "alerts",
    "priority",
)
"""What an operator may override, by the names the decorator takes."""

_MS: Final = timedelta(milliseconds=1)
_STORED: Final = {
    "max_attempts": "max_attempts",
    "backoff": "backoff",
    "timeout": "timeout_ms",
    "audit": "audit",
    "retention": "retention_ms",
    "alerts": "alerts",
    "priority": "priority",
}


def stored_key(field: str) -> str:
    """The key ``field`` is stored under in an override's JSON."""
    return _STORED[field]


def normalize(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Operator input (decorator spellings: ``timeout="30s"``, ``audit="off"``, ``retention=None``)
    as stored JSON values; InvalidPolicyError names the first bad field."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise InvalidPolicyError(
            ", ".join(unknown), "cannot be overridden", "one of " + ", ".join(FIELDS)
        )
    if not fields:
        raise InvalidPolicyError("fields", "none given", "one or more of " + ", ".join(FIELDS))
    out: dict[str, Any] = {}
    for field, value in fields.items():
        if field == "retention":
            out["retention_ms"] = None if value is None else validate_retention(value) // _MS
            continue
        if field == "timeout" and value is None:
            out["timeout_ms"] = None
            continue
        # Everything else is checked by the declaration's own rules.
        checked = JobPolicy.build(**{field: value})
        if field == "max_attempts":
            if not 1 <= checked.max_attempts <= MAX_ATTEMPTS_LIMIT:  # pragma: no cover
                raise InvalidPolicyError("max_attempts", f"got {value!r}", "1 to 1000")
            out["max_attempts"] = checked.max_attempts
        elif field == "backoff":
            out["backoff"] = str(checked.backoff)
        elif field == "timeout":
            assert checked.timeout is not None
            out["timeout_ms"] = max(1, checked.timeout // _MS)
        elif field == "audit":
            out["audit"] = int(checked.audit)
        elif field == "priority":
            out["priority"] = checked.priority
        else:
            out["alerts"] = checked.alerts.value
    return out


def apply(policy: JobPolicy, stored: Mapping[str, Any]) -> JobPolicy:
    """``policy`` with the stored override's fields in force."""
    changes: dict[str, Any] = {}
    if "max_attempts" in stored:
        changes["max_attempts"] = int(stored["max_attempts"])
    if "backoff" in stored:
        changes["backoff"] = Backoff.parse(stored["backoff"])
    if "timeout_ms" in stored:
        ms = stored["timeout_ms"]
        changes["timeout"] = None if ms is None else timedelta(milliseconds=int(ms))
    if "audit" in stored:
        changes["audit"] = AuditLevel(int(stored["audit"]))
    if "retention_ms" in stored:
        ms = stored["retention_ms"]
        changes["retention"] = None if ms is None else timedelta(milliseconds=int(ms))
    if "alerts" in stored:
        changes["alerts"] = JobPolicy.build(alerts=stored["alerts"]).alerts
    if "priority" in stored:
        changes["priority"] = int(stored["priority"])
    return replace(policy, **changes) if changes else policy
