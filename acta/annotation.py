"""What a type annotation means for conversion: the cached plan of each annotation, and the
definition-time check.

Each annotation is analysed once into a ``Plan`` (which converter pair applies, and its fields,
members or element types), cached by identity, because ``acta.shape`` converts both ways on the
hot path of every job. ``check_supported`` walks the same plans at definition time so an
unusable annotation fails at import, not inside a job; ``codec_for`` picks the codec of a whole
input. Pydantic models are recognised by duck typing, never imported.

``Plan``, ``plan_of`` and ``type_name`` lack a leading underscore only because ``acta.shape``
imports them: they are internal, for ``acta.shape`` only, and not part of acta's API. Callers
import ``check_supported`` and ``codec_for`` from ``acta.shape``, which re-exports them.
"""

from __future__ import annotations

import collections.abc as abc
import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from acta.codec import BYTES, JSON, TEXT, Codec, join_key
from acta.errors import ValidationError

__all__ = ["check_supported", "codec_for"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    name: str
    tp: object
    required: bool


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Plan:
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
_PLANS: dict[int, tuple[object, Plan]] = {}
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


def type_name(tp: object) -> str:
    if tp is None or tp is type(None):
        return "None"
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        return tp.__qualname__
    return repr(tp).replace("typing.", "").replace("collections.abc.", "")


def plan_of(tp: object) -> Plan:
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


def _classify(tp: object) -> Plan:
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return Plan("any", tp)
    if tp is None or tp is type(None):
        return Plan("literal", None, args=(None,))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _classify(args[0])
    if isinstance(tp, typing.NewType):
        return _classify(tp.__supertype__)
    if type(tp).__name__ == "TypeAliasType":  # the ``type X = ...`` statement of 3.12+
        return _classify(getattr(tp, "__value__", None))
    if origin is typing.Union or origin is types.UnionType:
        return Plan("union", tp, args=args)
    if origin is typing.Literal:
        return Plan("literal", tp, args=args)
    container = origin if origin is not None else tp
    if container in _SEQUENCES:
        build, accept = _SEQUENCES[container]
        return Plan("seq", tp, build, (args[0] if args else Any,), accept=accept)
    if container is tuple:
        # ``tuple[()]`` is the empty tuple; bare ``tuple`` and ``typing.Tuple`` take any items.
        bare = origin is None or tp is typing.Tuple  # noqa: UP006 - the bare alias itself
        if bare or (len(args) == 2 and args[1] is Ellipsis):
            return Plan("seq", tp, tuple, (args[0] if args else Any,), accept=(tuple,))
        return Plan("tuple", tp, tuple, () if args == ((),) else args)
    if container in _MAPPINGS:
        key, value = args if args else (str, Any)
        if key is not str:
            return _unsupported(tp, f"has {type_name(key)} keys", "JSON object keys are str")
        return Plan("dict", tp, dict, (value,), accept=(dict,) if container is dict else ())
    if isinstance(origin, type) and dataclasses.is_dataclass(origin):
        return _dataclass_plan(tp, origin, args)
    if not isinstance(tp, type):
        return _unsupported(tp, "is not a type", "annotate with a class or typing construct")
    if tp in _PRIMITIVES:
        return Plan("prim", tp, tp)
    if tp is bytes:
        return Plan("bytes", tp, tp)
    if tp in _TEXT_SCALARS:
        return Plan("text", tp, tp, _TEXT_SCALARS[tp])
    if issubclass(tp, enum.Enum):
        table: dict[tuple[type, object], Any] = {
            (type(m.value), m.value): m for m in tp if isinstance(m.value, _JSON_SCALARS)
        }
        return Plan("enum", tp, tp, table=table)
    if dataclasses.is_dataclass(tp):
        return _dataclass_plan(tp, tp, ())
    if typing.is_typeddict(tp):
        return _typeddict_plan(tp)
    if callable(getattr(tp, "model_validate", None)) and callable(getattr(tp, "model_dump", None)):
        return Plan("model", tp, tp)
    return _unsupported(tp, "is not a supported type", _SUPPORTED)


def _unsupported(tp: object, problem: str, rule: str) -> Plan:
    return Plan("unsupported", tp, problem=f"{type_name(tp)} {problem}", args=(rule,))


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


def _dataclass_plan(tp: object, cls: type, args: tuple[object, ...]) -> Plan:
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
    return Plan("dataclass", tp, cls, fields=fields)


def _typeddict_plan(tp: type) -> Plan:
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
    return Plan("typeddict", tp, tp, fields=fields)


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
    plan = plan_of(tp)
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
                raise ValidationError(path, f"{type_name(tp)} holds the value {value!r}", rule)
    elif kind in ("seq", "dict"):
        element = f"{path}[*]"  # any item or value
        if plan.target in (set, frozenset) and not _hashable(plan_of(plan.args[0])):
            raise ValidationError(
                element, f"{type_name(plan.args[0])} is not hashable", "set items must be hashable"
            )
        _check(plan.args[0], element, False, seen)
    elif kind == "tuple":
        for index, item in enumerate(plan.args):
            _check(item, join_key(path, index), False, seen)
    elif kind in ("dataclass", "typeddict") and id(plan) not in seen:
        seen.add(id(plan))  # recursive types (a Node holding list[Node]) are checked once
        for f in plan.fields:
            _check(f.tp, join_key(path, f.name), False, seen)


def _hashable(plan: Plan) -> bool:
    if plan.kind == "union":
        return all(_hashable(plan_of(member)) for member in plan.args)
    if plan.kind == "dataclass":
        return plan.target.__hash__ is not None
    return plan.kind not in ("dict", "typeddict") and plan.target not in (list, set)
