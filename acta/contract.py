"""A definition's contract: the shape of its input and result as stored, and its fingerprint.

Jobs outlive deploys: a job enqueued by yesterday's build is decoded by today's. The contract
describes what the stored data looks like, not how the Python class is called: field names,
which are required, and each field's shape (a scalar kind, a container of a shape, a record,
the values of an enum or a literal). Renaming a class changes nothing; adding a required field,
dropping one or changing a type changes the fingerprint. Workers compare it with the one the
ledger recorded when they start (``acta.ledger.contract``).

Pure: no I/O. The description follows ``acta.annotation``'s reading of an annotation, so it
covers exactly the types a job may take.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from acta.annotation import plan_of

Shape = Any
"""A JSON-ready description (str, list or dict)."""


def describe(tp: object) -> Shape:
    """The stored shape of values annotated ``tp``."""
    return _describe(tp, set())


def _describe(tp: object, seen: set[int]) -> Shape:
    plan = plan_of(tp)
    kind = plan.kind
    if kind in ("prim", "bytes", "text"):
        return plan.target.__name__
    if kind == "any":
        return "any"
    if kind == "literal":
        return {"literal": sorted(plan.args, key=json.dumps)}
    if kind == "enum":
        return {"enum": sorted((m.value for m in plan.target), key=json.dumps)}
    if kind == "union":
        members = [_describe(a, seen) for a in plan.args]
        return {"union": sorted(members, key=_key)}
    if kind == "seq":
        return {"seq": plan.target.__name__, "of": _describe(plan.args[0], seen)}
    if kind == "tuple":
        return {"tuple": [_describe(a, seen) for a in plan.args]}
    if kind == "dict":
        return {"dict": _describe(plan.args[0], seen)}
    if kind in ("dataclass", "typeddict"):
        if id(plan.target) in seen:
            return {"recursive": plan.target.__name__}
        inner = seen | {id(plan.target)}
        return {
            "record": {
                f.name: {"shape": _describe(f.tp, inner), "required": f.required}
                for f in plan.fields
            }
        }
    if kind == "model":
        schema = getattr(plan.target, "model_json_schema", None)
        return {"model": schema() if callable(schema) else plan.target.__name__}
    return {"unsupported": plan.problem}


def _key(shape: Shape) -> str:
    return json.dumps(shape, sort_keys=True)


@dataclass(frozen=True, slots=True)
class Contract:
    """One definition's contract as a build declares it: its shapes and their fingerprint."""

    name: str
    fingerprint: str
    shape: dict[str, Shape]


def contract_of(input_type: object, result_type: object) -> dict[str, Shape]:
    """A definition's contract: its input's and its result's shapes."""
    return {"input": describe(input_type), "result": describe(result_type)}


def fingerprint(contract: dict[str, Shape]) -> str:
    """A stable short digest of a contract (same shape, same fingerprint, on any machine)."""
    text = json.dumps(contract, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def differences(old: Shape, new: Shape, path: str = "") -> list[str]:
    """Where two shapes differ, as readable lines (``input.address.zip: str -> int``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        if "record" in old and "record" in new:
            return _record_differences(old["record"], new["record"], path)
        found: list[str] = []
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return [f"{path or '.'}: {_short(old)} -> {_short(new)}"]
            found += differences(old[key], new[key], f"{path}.{key}" if path else key)
        return found
    if old != new:
        return [f"{path or '.'}: {_short(old)} -> {_short(new)}"]
    return []


def _record_differences(old: dict[str, Any], new: dict[str, Any], path: str) -> list[str]:
    found: list[str] = []
    for name in sorted(set(old) | set(new)):
        where = f"{path}.{name}" if path else name
        if name not in new:
            found.append(f"{where}: removed")
        elif name not in old:
            required = " (required)" if new[name]["required"] else ""
            found.append(f"{where}: added{required}")
        else:
            if old[name]["required"] != new[name]["required"]:
                now = "required" if new[name]["required"] else "optional"
                found.append(f"{where}: now {now}")
            found += differences(old[name]["shape"], new[name]["shape"], where)
    return found


def _short(shape: Shape) -> str:
    text = json.dumps(shape, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
