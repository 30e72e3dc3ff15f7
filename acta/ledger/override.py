"""Operator overrides of the gates: a concurrency limit or a rate changed on a running system.

Each change is a compare-and-set on the gate's or meter's version, written with a
``gate-changed`` event in the same transaction. A declared limit comes back into force when the
override is cleared (``None``). Admission reads the limit in force on every admission, so a
change applies to the next job admitted, on every worker, without a restart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from acta.errors import ConflictError, ValidationError
from acta.ledger.enqueue import ensure_definitions
from acta.ledger.events import event_params
from acta.model.codes import EventCode, GateKind
from acta.model.rows import DefinitionSpec, GateInfo, MeterInfo
from acta.policy.gate import Rate
from acta.provider.verb import Verb, execute, fetch_all, fetch_one


def set_limit(
    namespace: str,
    kind: GateKind,
    name: str,
    limit: int | None,
    expected_version: int,
    now: datetime | None,
    specs: Sequence[DefinitionSpec] = (),
) -> Verb[int]:
    """Set (or with None clear) the limit of a concurrency gate; returns its new version.
    ``specs``: the caller's own definitions, registered first if the ledger lacks them."""
    namespace_id = yield from _namespace_id(namespace, now, limit is not None, specs)
    if namespace_id is None:
        return _nothing_to_clear(expected_version, f"{kind.label} gate {name!r}")
    key = {"namespace_id": namespace_id, "kind": int(kind), "name": name}
    if kind is GateKind.JOB and limit is not None:
        row = yield fetch_one("declared_limit", {"namespace_id": namespace_id, "name": name})
        if row is None or row["concurrency_limit"] is None:
            raise ValidationError(
                "job",
                f"{name!r} declares no concurrency_limit"
                + ("" if row is not None else " (no worker or producer registered it here)"),
                "override the limit of a definition declaring concurrency_limit, so that its "
                "admissions consult it; or a concurrency key with key=",
            )
    row = yield fetch_one(
        "gate_override", {**key, "now": now, "limit": limit, "expected": expected_version}
    )
    if row is None and expected_version == 0:
        if limit is None:
            current = yield fetch_one("gate_version", key)
            if current is None:
                return 0  # nothing to clear on a gate nobody has used
        else:
            row = yield fetch_one("gate_create", {**key, "now": now, "limit": limit})
    if row is None:
        current = yield fetch_one("gate_version", key)
        if _already(current, expected_version, current and current["limit_override"] == limit):
            return expected_version + 1
        raise _conflict(f"{kind.label} gate {name!r}", expected_version, current)
    shown = "cleared (declared limit back in force)" if limit is None else f"set to {limit}"
    yield from _event(
        namespace_id,
        now,
        f"concurrency limit of {kind.label} {name!r} {shown}",
        {"gate": kind.label, "name": name, "limit": limit},
    )
    version: int = row["version"]
    return version


def set_rate(
    namespace: str,
    meter: str,
    rate: Rate | None,
    expected_version: int,
    now: datetime | None,
    specs: Sequence[DefinitionSpec] = (),
) -> Verb[int]:
    """Set (or with None clear) the rate of a meter; returns its new version."""
    namespace_id = yield from _namespace_id(namespace, now, rate is not None, specs)
    if namespace_id is None:
        return _nothing_to_clear(expected_version, f"meter {meter!r}")
    key = {"namespace_id": namespace_id, "name": meter}
    if rate is not None:
        row = yield fetch_one("meter_declared", key)
        if not row["definitions"]:
            raise ValidationError(
                "meter",
                f"no definition registered here feeds a meter named {meter!r}",
                "the rate_key of a definition declaring rate_limit, or the name of a definition "
                "declaring rate_limit without a rate_key",
            )
    values = {
        "rate": None if rate is None else rate.count,
        "period_ms": None if rate is None else rate.period_ms,
    }
    row = yield fetch_one(
        "meter_override", {**key, **values, "now": now, "expected": expected_version}
    )
    if row is None and expected_version == 0:
        if rate is None:
            current = yield fetch_one("meter_version", key)
            if current is None:
                return 0
        else:
            row = yield fetch_one("meter_create", {**key, **values, "now": now})
    if row is None:
        current = yield fetch_one("meter_version", key)
        same = current is not None and (
            current["rate_override"],
            current["period_override_ms"],
        ) == (values["rate"], values["period_ms"])
        if _already(current, expected_version, same):
            return expected_version + 1
        raise _conflict(f"meter {meter!r}", expected_version, current)
    shown = "cleared (declared rate back in force)" if rate is None else f"set to {rate}"
    yield from _event(
        namespace_id,
        now,
        f"rate of meter {meter!r} {shown}",
        {"meter": meter, "rate": None if rate is None else str(rate)},
    )
    version: int = row["version"]
    return version


def gates(namespace: str) -> Verb[list[GateInfo]]:
    rows = yield fetch_all("gates_of_namespace", {"namespace": namespace})
    return [
        GateInfo(
            kind=row["kind"],
            name=row["name"],
            limit=row["limit_in_force"],
            declared_limit=row["declared_limit"],
            override=row["limit_override"],
            held=row["held"],
            holders=tuple(json.loads(row["holders"])) if row["holders"] else (),
            version=row["version"],
        )
        for row in rows
    ]


def meters(namespace: str) -> Verb[list[MeterInfo]]:
    rows = yield fetch_all("meters_of_namespace", {"namespace": namespace})
    out = []
    for row in rows:
        rate = Rate.from_row(row["rate"], row["period_ms"])
        declared = Rate.from_row(row["declared_rate"], row["declared_period_ms"])
        out.append(
            MeterInfo(
                name=row["name"],
                rate=str(rate),
                declared_rate=str(declared),
                overridden=row["rate_override"] is not None,
                next_free_at=row["next_free_at"],
                version=row["version"],
            )
        )
    return out


def _namespace_id(
    namespace: str, now: datetime | None, create: bool, specs: Sequence[DefinitionSpec]
) -> Verb[int | None]:
    """The namespace's id; made if missing when ``create``, with the caller's definitions
    (as a producer writes them: never overwriting a registration's policy), so an application
    may set a limit its own definitions declare before any of their jobs was enqueued.
    Clearing on a ledger that never saw the namespace writes nothing at all."""
    if not create:
        row = yield fetch_one("namespace_id", {"namespace": namespace})
        return None if row is None else int(row["namespace_id"])
    namespace_id, _ = yield from ensure_definitions(namespace, specs, now, "ensure_definition")
    return namespace_id


def _already(current: dict[str, Any] | None, expected: int, same: object) -> bool:
    """Whether this very change is already in: one version on, holding the value asked for.
    A change whose commit reply was lost runs again; finding its own write is success, not a
    conflict (had another operator set the same value meanwhile, the result is the same)."""
    return current is not None and current["version"] == expected + 1 and bool(same)


def _nothing_to_clear(expected: int, what: str) -> int:
    if expected != 0:
        raise _conflict(what, expected, None)
    return 0


def _event(
    namespace_id: int, now: datetime | None, message: str, detail: dict[str, Any]
) -> Verb[None]:
    yield execute(
        "insert_event",
        event_params(
            now,
            namespace_id,
            None,
            None,
            EventCode.GATE_CHANGED,
            message=message,
            detail=json.dumps(detail, ensure_ascii=False, sort_keys=True),
        ),
    )


def _conflict(what: str, expected: int, current: dict[str, Any] | None) -> ConflictError:
    found = (
        "it does not exist yet (expect version 0)"
        if current is None
        else (f"it is at version {current['version']}")
    )
    return ConflictError(
        f"{what}: expected version {expected}, but {found}; read it again and retry"
    )
