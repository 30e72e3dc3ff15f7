"""Operator overrides of the gates: a concurrency limit or a rate changed on a running system.

Each change is a compare-and-set on the gate's or meter's version, written with a
``gate-changed`` event in the same transaction. A declared limit comes back into force when the
override is cleared (``None``). Admission reads the limit in force on every admission, so a
change applies to the next job admitted, on every worker, without a restart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acta.errors import ConflictError, ValidationError
from acta.ledger.enqueue import ensure_definitions
from acta.ledger.events import Who, event_params
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
    who: Who | None = None,
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
    target = _Row(f"{kind.label} gate {name!r}", "gate", key)
    version, wrote = yield from _swap(
        target, {"limit": limit}, expected_version, now,
        lambda current: current["limit_override"] == limit,
    )  # fmt: skip
    if not wrote:
        return version
    shown = "cleared (declared limit back in force)" if limit is None else f"set to {limit}"
    yield from _event(
        namespace_id,
        now,
        f"concurrency limit of {kind.label} {name!r} {shown}",
        {"gate": kind.label, "name": name, "limit": limit},
        who,
    )
    return version


def set_rate(
    namespace: str,
    meter: str,
    rate: Rate | None,
    expected_version: int,
    now: datetime | None,
    specs: Sequence[DefinitionSpec] = (),
    who: Who | None = None,
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
    target = _Row(f"meter {meter!r}", "meter", key)
    version, wrote = yield from _swap(
        target, values, expected_version, now,
        lambda current: (current["rate_override"], current["period_override_ms"])
        == (values["rate"], values["period_ms"]),
    )  # fmt: skip
    if not wrote:
        return version
    shown = "cleared (declared rate back in force)" if rate is None else f"set to {rate}"
    yield from _event(
        namespace_id,
        now,
        f"rate of meter {meter!r} {shown}",
        {"meter": meter, "rate": None if rate is None else str(rate)},
        who,
    )
    return version


@dataclass(frozen=True, slots=True)
class _Row:
    """A gate or meter row an override changes: how to name it, its statements' prefix
    (``gate_override``, ``gate_create``, ``gate_version``; the same for ``meter``), its key."""

    what: str
    prefix: str
    key: dict[str, Any]


def _swap(
    row: _Row,
    values: dict[str, Any],
    expected: int,
    now: datetime | None,
    same: Callable[[dict[str, Any]], bool],
) -> Verb[tuple[int, bool]]:
    """The compare-and-set of an override: (new version, whether this call wrote it). A row
    nobody has used is created at version 1 when expected is 0; clearing such a row is a
    no-op at version 0. ``same`` tells whether the current row holds exactly ``values``."""
    clearing = all(v is None for v in values.values())
    params = {**row.key, **values, "now": now}
    written = yield fetch_one(f"{row.prefix}_override", {**params, "expected": expected})
    if written is None and expected == 0:
        if clearing:
            current = yield fetch_one(f"{row.prefix}_version", row.key)
            if current is None:
                return 0, False  # nothing to clear on a row nobody has used
        else:
            written = yield fetch_one(f"{row.prefix}_create", params)
    if written is None:
        current = yield fetch_one(f"{row.prefix}_version", row.key)
        if _already(current, expected, current is not None and same(current)):
            return expected + 1, False
        raise _conflict(row.what, expected, current)
    return int(written["version"]), True


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
    namespace_id: int,
    now: datetime | None,
    message: str,
    detail: dict[str, Any],
    who: Who | None,
) -> Verb[None]:
    if who is not None:
        message = f"{message} by {who.actor}: {who.reason}"
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
            actor=None if who is None else who.actor,
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
