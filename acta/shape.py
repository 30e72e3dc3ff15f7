"""Typed Python values to JSON-shaped data and back, strictly, guided by a type annotation.

``to_data`` turns a handler's input (dataclasses, enums, datetimes, containers...) into plain
data for a codec; ``from_data`` rebuilds the typed value from decoded data and refuses anything
that does not fit exactly, naming the path of the first bad value. ``check_supported`` runs the
same analysis at definition time so an unusable annotation fails at import, not inside a job.

Each annotation is analysed once into a cached plan, because both directions run on the hot
path of every job. This module must not encode bytes or touch storage: that is ``acta.codec``.
Pydantic is supported by duck typing (``model_dump`` / ``model_validate``), never imported.
"""

from __future__ import annotations

import collections.abc as abc
import contextlib
import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any, cast
from uuid import UUID

from acta.codec import BYTES, JSON, MAX_DEPTH, TEXT, Codec, join_key
from acta.errors import InputDecodeError, PayloadError, ValidationError

__all__ = ["check_supported", "codec_for", "from_data", "to_data"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    tp: object
    required: bool


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class _Plan:
    """What an annotation means for conversion; ``kind`` selects the converter pair."""

    kind: str
    tp: object
    target: Any = None  # the class a value must be, or the container to build
    args: tuple[Any, ...] = ()  # members, element types, literal values, or text converters
    fields: tuple[_Field, ...] = ()
    accept: tuple[type, ...] = ()  # container types to_data takes for this annotation
    table: dict[tuple[type, object], Any] = dataclasses.field(default_factory=dict)
    problem: str = ""


_SUPPORTED = (
    "use a dataclass, TypedDict, pydantic model, Enum, Literal, str, int, float, bool, None, "
    "datetime, date, UUID, Decimal, or list/tuple/set/frozenset/dict of those"
)
_PLANS: dict[int, tuple[object, _Plan]] = {}
_PLAN_CACHE_SIZE = 4096
_JSON_SCALARS = (str, int, float, bool, type(None))
_PRIMITIVES = (str, int, float, bool)
_MAPPINGS = (dict, abc.Mapping, abc.MutableMapping)
# origin -> (container from_data builds, containers to_data accepts)
_SEQUENCES: dict[object, tuple[type, tuple[type, ...]]] = {
    list: (list, (list,)),
    abc.MutableSequence: (list, (list,)),
    abc.Sequence: (list, (list, tuple)),
    set: (set, (set,)),
    abc.MutableSet: (set, (set,)),
    frozenset: (frozenset, (frozenset,)),
    abc.Set: (frozenset, (set, frozenset)),
}


def _aware_text(value: datetime) -> str:
    offset = value.utcoffset()
    if offset is None:
        raise ValueError("datetime is naive (datetimes must be timezone-aware)")
    if offset.microseconds:  # fromisoformat does not read these back faithfully
        raise ValueError(f"UTC offset {offset} has a fraction of a second (whole seconds only)")
    return value.isoformat()


def _aware_parse(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    if value.utcoffset() is None:
        raise ValueError("it has no UTC offset; only timezone-aware datetimes are read")
    return value


def _decimal_text(value: Decimal) -> str:
    if not value.is_finite():
        raise ValueError(f"Decimal {value} is not finite (only finite decimals)")
    return str(value)


def _decimal_parse(text: str) -> Decimal:
    # Decimal() also takes padding, underscores and NaN; what to_data writes has none of them.
    value = Decimal(text)
    if not value.is_finite() or text != text.strip() or "_" in text:
        raise ValueError("not a plain finite decimal")
    return value


# Scalars stored as text: type -> (value to text, text to value); both raise ValueError.
_TEXT_SCALARS: dict[object, tuple[Callable[[Any], str], Callable[[str], object]]] = {
    datetime: (_aware_text, _aware_parse),
    date: (date.isoformat, date.fromisoformat),
    UUID: (str, UUID),
    Decimal: (_decimal_text, _decimal_parse),
}


def _name(tp: object) -> str:
    if tp is None or tp is type(None):
        return "None"
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        return tp.__qualname__
    return repr(tp).replace("typing.", "").replace("collections.abc.", "")


def _plan(tp: object) -> _Plan:
    # Keyed by identity, not equality: ``int | str == str | int`` and so do ``list[...]`` of
    # them, yet union order decides which member wins. Entries keep their annotation alive so
    # an id is never reused while cached; the bound only matters for annotations built anew
    # on every call, which miss the cache anyway.
    entry = _PLANS.get(id(tp))
    if entry is not None and entry[0] is tp:
        return entry[1]
    plan = _classify(tp)
    # An unresolved forward reference may resolve later, so failures are not cached.
    if plan.kind != "unsupported":
        if len(_PLANS) >= _PLAN_CACHE_SIZE:
            _PLANS.clear()
        _PLANS[id(tp)] = (tp, plan)
    return plan


def _classify(tp: object) -> _Plan:
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return _Plan("any", tp)
    if tp is None or tp is type(None):
        return _Plan("literal", None, args=(None,))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _classify(args[0])
    if isinstance(tp, typing.NewType):
        return _classify(tp.__supertype__)
    if type(tp).__name__ == "TypeAliasType":  # the ``type X = ...`` statement of 3.12+
        return _classify(getattr(tp, "__value__", None))
    if origin is typing.Union or origin is types.UnionType:
        return _Plan("union", tp, args=args)
    if origin is typing.Literal:
        return _Plan("literal", tp, args=args)
    container = origin if origin is not None else tp
    if container in _SEQUENCES:
        build, accept = _SEQUENCES[container]
        return _Plan("seq", tp, build, (args[0] if args else Any,), accept=accept)
    if container is tuple:
        # ``tuple[()]`` is the empty tuple; bare ``tuple`` and ``typing.Tuple`` take any items.
        bare = origin is None or tp is typing.Tuple  # noqa: UP006 - the bare alias itself
        if bare or (len(args) == 2 and args[1] is Ellipsis):
            return _Plan("seq", tp, tuple, (args[0] if args else Any,), accept=(tuple,))
        return _Plan("tuple", tp, tuple, () if args == ((),) else args)
    if container in _MAPPINGS:
        key, value = args if args else (str, Any)
        if key is not str:
            return _unsupported(tp, f"has {_name(key)} keys", "JSON object keys are str")
        return _Plan("dict", tp, dict, (value,), accept=(dict,) if container is dict else ())
    if isinstance(origin, type) and dataclasses.is_dataclass(origin):
        return _dataclass_plan(tp, origin, args)
    if not isinstance(tp, type):
        return _unsupported(tp, "is not a type", "annotate with a class or typing construct")
    if tp in _PRIMITIVES:
        return _Plan("prim", tp, tp)
    if tp is bytes:
        return _Plan("bytes", tp, tp)
    if tp in _TEXT_SCALARS:
        return _Plan("text", tp, tp, _TEXT_SCALARS[tp])
    if issubclass(tp, enum.Enum):
        table: dict[tuple[type, object], Any] = {
            (type(m.value), m.value): m for m in tp if isinstance(m.value, _JSON_SCALARS)
        }
        return _Plan("enum", tp, tp, table=table)
    if dataclasses.is_dataclass(tp):
        return _dataclass_plan(tp, tp, ())
    if typing.is_typeddict(tp):
        return _typeddict_plan(tp)
    if callable(getattr(tp, "model_validate", None)) and callable(getattr(tp, "model_dump", None)):
        return _Plan("model", tp, tp)
    return _unsupported(tp, "is not a supported type", _SUPPORTED)


def _unsupported(tp: object, problem: str, rule: str) -> _Plan:
    return _Plan("unsupported", tp, problem=f"{_name(tp)} {problem}", args=(rule,))


def _hints(cls: type, extras: bool = False) -> dict[str, Any] | str:
    try:
        return typing.get_type_hints(cls, include_extras=extras)
    except Exception as exc:  # NameError for a missing forward reference, TypeError, ...
        return f"has annotations that cannot be resolved ({type(exc).__name__}: {exc})"


def _substitute(hint: object, bound: dict[object, object]) -> object:
    """Put a generic dataclass's type arguments in place of its type variables."""
    if isinstance(hint, typing.TypeVar):
        return bound.get(hint, Any)
    params = getattr(hint, "__parameters__", ())
    if bound and params:
        return hint[tuple(bound.get(p, Any) for p in params)]  # type: ignore[index]
    return hint


def _dataclass_plan(tp: object, cls: type, args: tuple[object, ...]) -> _Plan:
    hints = _hints(cls)
    if isinstance(hints, str):
        return _unsupported(tp, hints, "define every annotated name at module level")
    specs = cls.__dataclass_fields__  # type: ignore[attr-defined]
    for name, hint in hints.items():
        # An InitVar is not stored on the instance, so a required one can never be rebuilt.
        spec = specs.get(name)
        if isinstance(hint, dataclasses.InitVar) and spec and spec.default is dataclasses.MISSING:
            return _unsupported(tp, f"has a required InitVar {name!r}", "give it a default")
    bound = dict(zip(getattr(cls, "__parameters__", ()), args, strict=False))
    # Fields with init=False are derived in __post_init__; they are neither stored nor read.
    fields = tuple(
        _Field(
            f.name,
            _substitute(hints[f.name], bound),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
        if f.init
    )
    return _Plan("dataclass", tp, cls, fields=fields)


def _typeddict_plan(tp: type) -> _Plan:
    hints, marked = _hints(tp), _hints(tp, extras=True)
    if isinstance(hints, str) or isinstance(marked, str):
        problem = hints if isinstance(hints, str) else str(marked)
        return _unsupported(tp, problem, "define every annotated name at module level")
    required = set(getattr(tp, "__required_keys__", ()))
    # Python 3.11 misfiles NotRequired/Required written as strings, so read the markers here.
    for name, hint in marked.items():
        marker = typing.get_origin(hint)
        if marker is typing.NotRequired:
            required.discard(name)
        elif marker is typing.Required:
            required.add(name)
    fields = tuple(_Field(name, hint, name in required) for name, hint in hints.items())
    return _Plan("typeddict", tp, tp, fields=fields)


# --- conversion, both ways ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Way:
    """A direction of conversion: ``out`` is typed value -> data, otherwise data -> value.

    Each kind has one converter handling both directions so that their rules stay side by
    side; only the error class differs (``PayloadError`` out, ``InputDecodeError`` in).
    """

    out: bool

    def step(self, value: object, plan: _Plan, path: str, depth: int) -> object:
        return _KINDS[plan.kind](value, plan, path, depth, self)

    def fail(self, path: str, problem: str, rule: str = "") -> Exception:
        if self.out:
            return PayloadError(path, problem, rule)
        return InputDecodeError(path, f"{problem} ({rule})" if rule else problem)

    def wrong(self, value: object, plan: _Plan, path: str, rule: str = "") -> Exception:
        got = "None" if value is None else type(value).__name__
        return self.fail(path, f"expected {_name(plan.tp)}, got {got}", rule)

    def deeper(self, path: str, depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise self.fail(path, f"nested deeper than {MAX_DEPTH} levels", "or holds a cycle")
        return depth + 1


_OUT, _IN = _Way(out=True), _Way(out=False)
_Convert = Callable[[object, _Plan, str, int, _Way], object]


def to_data(value: object, tp: object, path: str = "input") -> object:
    """Turn ``value``, which must match annotation ``tp``, into JSON-shaped data.

    ``Any``/``object`` pass values through for the codec to judge. Raises ``PayloadError``
    naming the path and the expected type when the value does not match, and
    ``ValidationError`` when ``tp`` itself is not supported.
    """
    return _OUT.step(value, _plan(tp), path, 0)


def from_data(data: object, tp: object, path: str = "input") -> object:
    """Rebuild a value of annotation ``tp`` from decoded data, refusing anything that differs.

    Raises ``InputDecodeError`` naming the path of the first value that does not fit, and
    ``ValidationError`` if ``tp`` itself is not supported (``check_supported`` says so earlier).
    """
    return _IN.step(data, _plan(tp), path, 0)


def _as_is(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    return value


def _unusable(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    raise ValidationError(path, plan.problem, plan.args[0])


def _prim(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
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


def _bytes(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    if depth == 0 and isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise way.wrong(value, plan, path, "bytes is supported only as the whole input")


def _text(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
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
        raise way.fail(path, f"{value!r} is not a valid {_name(plan.tp)}: {exc}") from None


def _enum(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
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
        raise way.fail(path, f"{value!r} is not a value of {_name(plan.tp)} ({allowed})")
    return member


def _literal(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    for allowed in plan.args:
        plain = allowed.value if isinstance(allowed, enum.Enum) else allowed
        if way.out and type(allowed) is type(value) and allowed == value:
            return plain
        if not way.out and type(plain) is type(value) and plain == value:
            return allowed
    raise way.fail(path, f"{value!r} is not allowed", f"expected {_name(plan.tp)}")


def _union(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    failures: list[Exception] = []
    for index, member in enumerate(plan.args):
        try:
            result = way.step(value, _plan(member), path, depth)
        except (PayloadError, InputDecodeError) as exc:
            if member is not type(None):  # "not None" adds nothing to the real complaint
                failures.append(exc)
            continue
        # Out: refuse values that an earlier member would capture on the way back (a str
        # that looks like a datetime under ``str | datetime``): the type would change.
        for earlier in plan.args[:index] if way.out else ():
            try:
                _IN.step(result, _plan(earlier), path, depth)
            except InputDecodeError:
                continue
            raise way.fail(
                path,
                f"this {type(value).__name__} would be read back as {_name(earlier)}",
                f"put {_name(member)} before {_name(earlier)} in {_name(plan.tp)}",
            )
        return result
    if len(failures) == 1:
        raise failures[0]
    raise way.wrong(value, plan, path, "; ".join(str(exc) for exc in failures))


def _seq(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    if not isinstance(value, plan.accept if way.out else list):
        raise way.wrong(value, plan, path)
    inner, element = way.deeper(path, depth), _plan(plan.args[0])
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


def _tuple(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    if not isinstance(value, tuple if way.out else list) or len(value) != len(plan.args):
        raise way.wrong(value, plan, path, f"exactly {len(plan.args)} items")
    inner = way.deeper(path, depth)
    out = [
        way.step(item, _plan(tp), join_key(path, i), inner)
        for i, (item, tp) in enumerate(zip(value, plan.args, strict=True))
    ]
    return out if way.out else tuple(out)


def _dict(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    if not isinstance(value, (plan.accept or abc.Mapping) if way.out else dict):
        raise way.wrong(value, plan, path)
    inner, element = way.deeper(path, depth), _plan(plan.args[0])
    out: dict[str, object] = {}
    for key, item in cast("abc.Mapping[object, object]", value).items():
        if not isinstance(key, str):
            raise way.fail(path, f"key {key!r} is a {type(key).__name__}", "keys must be str")
        out[key] = way.step(item, element, join_key(path, key), inner)
    return out


def _fields(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> dict[str, object]:
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
        f.name: way.step(source[f.name], _plan(f.tp), join_key(path, f.name), inner)
        for f in plan.fields
        if f.name in source
    }


def _check_keys(data: dict[Any, Any], plan: _Plan, path: str, way: _Way) -> None:
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
        raise way.fail(path, f"unknown field {extra!r}", f"{_name(plan.tp)} has no such field")


def _dataclass(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    values = _fields(value, plan, path, depth, way)
    if way.out:
        return values
    try:
        return plan.target(**values)
    except (TypeError, ValueError) as exc:  # raised by __init__ or __post_init__ checks
        raise way.fail(path, f"{_name(plan.target)} refused the data: {exc}") from exc


def _model(value: object, plan: _Plan, path: str, depth: int, way: _Way) -> object:
    if way.out:
        if not isinstance(value, plan.target):
            raise way.wrong(value, plan, path)
        return value.model_dump(mode="json")
    try:
        return plan.target.model_validate(value)
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise way.fail(path, f"{_name(plan.tp)} refused the data: {exc}") from exc


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


# --- definition time ---------------------------------------------------------------------------


def codec_for(tp: object) -> Codec:
    """The codec for a whole input of annotation ``tp``: text, bytes, or JSON for the rest."""
    if tp is str:
        return TEXT
    if tp is bytes:
        return BYTES
    return JSON


def check_supported(tp: object, path: str = "input") -> None:
    """Raise ``ValidationError`` now if values of ``tp`` could not be converted at run time."""
    _check(tp, path, True, set())


def _check(tp: object, path: str, top: bool, seen: set[int]) -> None:
    plan = _plan(tp)
    kind = plan.kind
    if kind == "unsupported":
        raise ValidationError(path, plan.problem, plan.args[0])
    if kind == "bytes" and not top:
        raise ValidationError(
            path, "bytes inside a structure or union", "bytes is supported only as the whole input"
        )
    if kind == "union":
        for member in plan.args:
            _check(member, path, False, seen)
    elif kind in ("literal", "enum"):
        # Values must survive JSON as themselves: a tuple value would come back as a list.
        for value in (v.value if isinstance(v, enum.Enum) else v for v in plan.target or plan.args):
            finite = not isinstance(value, float) or math.isfinite(value)
            if not (isinstance(value, _JSON_SCALARS) and finite):
                rule = "enum and Literal values must be str, int, finite float, bool or None"
                raise ValidationError(path, f"{_name(tp)} holds the value {value!r}", rule)
    elif kind in ("seq", "dict"):
        element = f"{path}[*]"  # any item or value
        if plan.target in (set, frozenset) and not _hashable(_plan(plan.args[0])):
            raise ValidationError(
                element, f"{_name(plan.args[0])} is not hashable", "set items must be hashable"
            )
        _check(plan.args[0], element, False, seen)
    elif kind == "tuple":
        for index, item in enumerate(plan.args):
            _check(item, join_key(path, index), False, seen)
    elif kind in ("dataclass", "typeddict") and id(plan) not in seen:
        seen.add(id(plan))  # recursive types (a Node holding list[Node]) are checked once
        for f in plan.fields:
            _check(f.tp, join_key(path, f.name), False, seen)


def _hashable(plan: _Plan) -> bool:
    if plan.kind == "union":
        return all(_hashable(_plan(member)) for member in plan.args)
    if plan.kind == "dataclass":
        return plan.target.__hash__ is not None
    return plan.kind not in ("dict", "typeddict") and plan.target not in (list, set)
