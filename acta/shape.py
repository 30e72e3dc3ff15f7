"""Typed Python values to JSON-shaped data and back, strictly, guided by a type annotation.

``to_data`` turns a handler's input (dataclasses, enums, datetimes, containers...) into plain
data for a codec; ``from_data`` rebuilds the typed value from decoded data and refuses anything
that does not fit exactly, naming the path of the first bad value. What an annotation means,
and the definition-time ``check_supported``, live in ``acta.annotation``; ``check_supported``
and ``codec_for`` are re-exported here, so callers need only this module.

Both directions run on the hot path of every job, so they follow the plan that
``acta.annotation`` analysed once per annotation. This module must not encode bytes or touch
storage: that is ``acta.codec``. Pydantic is supported by duck typing (``model_dump`` /
``model_validate``), never imported.
"""

from __future__ import annotations

import collections.abc as abc
import contextlib
import dataclasses
import enum
import math
from collections.abc import Callable
from datetime import date, datetime
from typing import Any, cast

from acta.annotation import Plan, check_supported, codec_for, plan_of, type_name
from acta.codec import MAX_DEPTH, Codec, check_size, encode_value, join_key
from acta.errors import InputDecodeError, PayloadError, ValidationError

__all__ = ["check_supported", "codec_for", "from_data", "to_data"]


# --- conversion, both ways ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Way:
    """A direction of conversion: ``out`` is typed value -> data, otherwise data -> value.

    Each kind has one converter handling both directions so that their rules stay side by
    side; only the error class differs (``PayloadError`` out, ``InputDecodeError`` in).
    """

    out: bool

    def step(self, value: object, plan: Plan, path: str, depth: int) -> object:
        return _KINDS[plan.kind](value, plan, path, depth, self)

    def fail(self, path: str, problem: str, rule: str = "") -> Exception:
        if self.out:
            return PayloadError(path, problem, rule)
        return InputDecodeError(path, f"{problem} ({rule})" if rule else problem)

    def wrong(self, value: object, plan: Plan, path: str, rule: str = "") -> Exception:
        got = "None" if value is None else type(value).__name__
        return self.fail(path, f"expected {type_name(plan.tp)}, got {got}", rule)

    def deeper(self, path: str, depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise self.fail(path, f"nested deeper than {MAX_DEPTH} levels", "or holds a cycle")
        return depth + 1


_OUT, _IN = _Way(out=True), _Way(out=False)
_Convert = Callable[[object, Plan, str, int, _Way], object]


def to_data(value: object, tp: object, path: str = "input") -> object:
    """Turn ``value``, which must match annotation ``tp``, into JSON-shaped data.

    ``Any``/``object`` pass values through for the codec to judge. Raises ``PayloadError``
    naming the path and the expected type when the value does not match, and
    ``ValidationError`` when ``tp`` itself is not supported.
    """
    return _OUT.step(value, plan_of(tp), path, 0)


def from_data(data: object, tp: object, path: str = "input") -> object:
    """Rebuild a value of annotation ``tp`` from decoded data, refusing anything that differs.

    Raises ``InputDecodeError`` naming the path of the first value that does not fit, and
    ``ValidationError`` if ``tp`` itself is not supported (``check_supported`` says so earlier).
    """
    return _IN.step(data, plan_of(tp), path, 0)


def encode_payload(
    value: object, tp: object, field: str, cap: int, codec: Codec | None = None
) -> tuple[int, bytes]:
    """Convert ``value`` as ``tp`` and encode it with ``codec`` (by default ``tp``'s), refusing
    anything over ``cap`` bytes; errors name ``field``. Untyped (``Any``), a str or bytes keeps
    its own codec (text, bytes) rather than JSON. Returns (codec code, body): what the ledger
    stores."""
    data = to_data(value, tp, field)
    if codec is None:
        codec = codec_for(type(value) if tp is Any and isinstance(value, str | bytes) else tp)
    return codec.code, check_size(encode_value(codec, data, field), cap, field)


def _as_is(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    return value


def _unusable(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    raise ValidationError(path, plan.problem, plan.args[0])


def _prim(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    want = plan.target
    if want is bool:
        if type(value) is bool:
            return value
    elif isinstance(value, bool):
        raise way.wrong(value, plan, path, "a bool is not accepted as a number")
    elif want is int and isinstance(value, int):
        return value if type(value) is int else int(value)  # IntEnum and kin become plain
    elif want is float and isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise way.fail(path, f"number {value!r} is not finite", "JSON has no NaN/Infinity")
        if type(value) in (int, float):
            # An int where float is declared stays an int both ways (the numeric tower), so a
            # big integer round-trips exactly instead of losing precision in a float.
            return value
        return float(value)
    elif want is str and isinstance(value, str):
        return value if type(value) is str else str.__str__(value)
    raise way.wrong(value, plan, path)


def _bytes(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    if depth == 0 and isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise way.wrong(value, plan, path, "bytes is supported only as the whole input")


def _text(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    if way.out:
        # date is a base of datetime, but a datetime where a date is expected is a mistake.
        if not isinstance(value, plan.target) or (plan.target is date and type(value) is datetime):
            raise way.wrong(value, plan, path)
        try:
            return plan.args[0](value)
        except ValueError as exc:
            raise way.fail(path, str(exc)) from None
    if not isinstance(value, str):
        raise way.wrong(value, plan, path, "expected its text form")
    try:
        return plan.args[1](value)
    except (ValueError, ArithmeticError) as exc:  # decimal.InvalidOperation is arithmetic
        raise way.fail(path, f"{value!r} is not a valid {type_name(plan.tp)}: {exc}") from None


def _enum(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    if way.out:
        if not isinstance(value, plan.target):
            raise way.wrong(value, plan, path)
        return value.value
    try:
        member = plan.table.get((type(value), value))
    except TypeError:  # unhashable data matches no member
        member = None
    if member is None and issubclass(plan.target, enum.Flag) and type(value) is int:
        try:  # a Flag value may combine members
            member = plan.target(value)
        except ValueError:
            member = None
    if member is None:
        allowed = ", ".join(repr(m.value) for m in plan.target)
        raise way.fail(path, f"{value!r} is not a value of {type_name(plan.tp)} ({allowed})")
    return member


def _literal(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    for allowed in plan.args:
        plain = allowed.value if isinstance(allowed, enum.Enum) else allowed
        if way.out and type(allowed) is type(value) and allowed == value:
            return plain
        if not way.out and type(plain) is type(value) and plain == value:
            return allowed
    raise way.fail(path, f"{value!r} is not allowed", f"expected {type_name(plan.tp)}")


def _union(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    failures: list[Exception] = []
    for index, member in enumerate(plan.args):
        try:
            result = way.step(value, plan_of(member), path, depth)
        except (PayloadError, InputDecodeError) as exc:
            if member is not type(None):  # "not None" adds nothing to the real complaint
                failures.append(exc)
            continue
        # Out: refuse values that an earlier member would capture on the way back (a str
        # that looks like a datetime under ``str | datetime``): the type would change.
        for earlier in plan.args[:index] if way.out else ():
            try:
                _IN.step(result, plan_of(earlier), path, depth)
            except InputDecodeError:
                continue
            raise way.fail(
                path,
                f"this {type(value).__name__} would be read back as {type_name(earlier)}",
                f"put {type_name(member)} before {type_name(earlier)} in {type_name(plan.tp)}",
            )
        return result
    if len(failures) == 1:
        raise failures[0]
    raise way.wrong(value, plan, path, "; ".join(str(exc) for exc in failures))


def _seq(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    if not isinstance(value, plan.accept if way.out else list):
        raise way.wrong(value, plan, path)
    inner, element = way.deeper(path, depth), plan_of(plan.args[0])
    items = cast("abc.Collection[object]", value)
    out = [way.step(item, element, join_key(path, i), inner) for i, item in enumerate(items)]
    if way.out:
        if plan.target is set or plan.target is frozenset:
            # Sets have no order; sorting makes equal sets encode to equal bytes when it can.
            with contextlib.suppress(TypeError):
                out.sort()
        return out
    if plan.target is list:
        return out
    try:
        return plan.target(out)
    except TypeError as exc:  # unhashable items for a set
        raise way.wrong(value, plan, path, f"its items cannot be collected ({exc})") from None


def _tuple(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    if not isinstance(value, tuple if way.out else list) or len(value) != len(plan.args):
        raise way.wrong(value, plan, path, f"exactly {len(plan.args)} items")
    inner = way.deeper(path, depth)
    out = [
        way.step(item, plan_of(tp), join_key(path, i), inner)
        for i, (item, tp) in enumerate(zip(value, plan.args, strict=True))
    ]
    return out if way.out else tuple(out)


def _dict(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    if not isinstance(value, (plan.accept or abc.Mapping) if way.out else dict):
        raise way.wrong(value, plan, path)
    inner, element = way.deeper(path, depth), plan_of(plan.args[0])
    out: dict[str, object] = {}
    for key, item in cast("abc.Mapping[object, object]", value).items():
        if not isinstance(key, str):
            raise way.fail(path, f"key {key!r} is a {type(key).__name__}", "keys must be str")
        out[key] = way.step(item, element, join_key(path, key), inner)
    return out


def _fields(value: object, plan: Plan, path: str, depth: int, way: _Way) -> dict[str, object]:
    """Convert the fields of a dataclass (out: read from attributes) or of a TypedDict."""
    if plan.kind == "dataclass" and way.out:
        # Exact type only: a subclass's extra fields would be dropped without a word.
        if type(value) is not plan.target:
            raise way.wrong(value, plan, path, "subclasses are not accepted")
        source: abc.Mapping[str, object] = {f.name: getattr(value, f.name) for f in plan.fields}
    elif isinstance(value, dict):
        _check_keys(value, plan, path, way)
        source = value
    else:
        raise way.wrong(value, plan, path)
    inner = way.deeper(path, depth)
    return {
        f.name: way.step(source[f.name], plan_of(f.tp), join_key(path, f.name), inner)
        for f in plan.fields
        if f.name in source
    }


def _check_keys(data: dict[Any, Any], plan: Plan, path: str, way: _Way) -> None:
    """Refuse missing required keys and unknown keys of a dataclass or TypedDict."""
    present = 0
    for f in plan.fields:
        if f.name in data:
            present += 1
        elif f.required:
            raise way.fail(join_key(path, f.name), f"required field {f.name!r} is missing")
    if present != len(data):  # only then is there a key that no field claims
        known = {f.name for f in plan.fields}
        extra = next(k for k in data if k not in known)
        raise way.fail(path, f"unknown field {extra!r}", f"{type_name(plan.tp)} has no such field")


def _dataclass(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    values = _fields(value, plan, path, depth, way)
    if way.out:
        return values
    try:
        return plan.target(**values)
    except (TypeError, ValueError) as exc:  # raised by __init__ or __post_init__ checks
        raise way.fail(path, f"{type_name(plan.target)} refused the data: {exc}") from exc


def _model(value: object, plan: Plan, path: str, depth: int, way: _Way) -> object:
    if way.out:
        if not isinstance(value, plan.target):
            raise way.wrong(value, plan, path)
        return value.model_dump(mode="json")
    try:
        return plan.target.model_validate(value)
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise way.fail(path, f"{type_name(plan.tp)} refused the data: {exc}") from exc


_KINDS: dict[str, _Convert] = {
    "any": _as_is,
    "prim": _prim,
    "bytes": _bytes,
    "text": _text,
    "enum": _enum,
    "literal": _literal,
    "union": _union,
    "seq": _seq,
    "tuple": _tuple,
    "dict": _dict,
    "dataclass": _dataclass,
    "typeddict": _fields,
    "model": _model,
    "unsupported": _unusable,
}
