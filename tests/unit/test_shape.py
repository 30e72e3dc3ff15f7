"""Typed values to JSON-shaped data and back (acta.shape).

The module uses postponed annotations on purpose: every dataclass below is annotated with
strings, so these tests also prove that annotations are resolved, not read raw.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    NewType,
    NotRequired,
    Optional,
    TypedDict,
    TypeVar,
)
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acta.codec import BYTES, JSON, MAX_DEPTH, TEXT
from acta.errors import InputDecodeError, PayloadError, ValidationError
from acta.shape import check_supported, codec_for, from_data, to_data

T = TypeVar("T")
ZERO_ID = UUID(int=0)
UserId = NewType("UserId", int)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    READ = 1
    WRITE = 2


@dataclass(frozen=True)
class Address:
    zip: str
    lines: list[str] = field(default_factory=list)


@dataclass
class Person:
    name: str
    born: date
    seen: datetime
    address: Address | None = None
    tags: frozenset[str] = frozenset()
    scores: dict[str, float] = field(default_factory=dict)
    color: Color = Color.RED
    level: Level = Level.LOW
    ident: UUID = ZERO_ID
    amount: Decimal = Decimal("0")
    pair: tuple[int, str] = (0, "")
    history: tuple[datetime, ...] = ()
    mood: Literal["calm", "busy"] = "calm"
    nickname: Optional[str] = None  # noqa: UP045 - the typing.Optional spelling on purpose


@dataclass
class Node:
    label: str
    children: list[Node] = field(default_factory=list)


@dataclass
class Box(Generic[T]):
    item: T
    items: list[T]


@dataclass
class Derived:
    width: int
    area: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.width < 0:
            raise ValueError("width must not be negative")
        self.area = self.width * self.width


@dataclass
class NeedsInitVar:
    seed: InitVar[int]


@dataclass
class Point:
    x: int
    y: float


@dataclass
class Point3(Point):
    z: int = 0


@dataclass
class Other:
    x: int


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


class Plain:
    pass


@dataclass
class HasPlain:
    thing: Plain


@dataclass
class Dangling:
    ref: Missing  # type: ignore[name-defined]  # noqa: F821 - unresolved on purpose


class FakeModel:
    """Quacks like a pydantic v2 model; pydantic itself is not a dependency."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeModel) and other.n == self.n

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        assert mode == "json"
        return {"n": self.n}

    @classmethod
    def model_validate(cls, data: object) -> FakeModel:
        if not isinstance(data, dict) or type(data.get("n")) is not int:
            raise ValueError("n must be an int")
        return cls(data["n"])


NOON = datetime(2024, 5, 6, 12, 0, tzinfo=UTC)


def through_json(value: object, tp: object) -> object:
    return from_data(JSON.decode(JSON.encode(to_data(value, tp))), tp)


def full_person() -> Person:
    return Person(
        name="Zoë",
        born=date(1990, 2, 3),
        seen=datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        address=Address("12345", ["1 Main St", "Flat 2"]),
        tags=frozenset({"b", "a"}),
        scores={"math": 1.5, "art": 3},
        color=Color.GREEN,
        level=Level.HIGH,
        ident=UUID("12345678-1234-5678-1234-567812345678"),
        amount=Decimal("-12.340"),
        pair=(7, "seven"),
        history=(NOON, NOON + timedelta(days=1)),
        mood="busy",
        nickname="z",
    )


class TestToData:
    def test_full_dataclass(self) -> None:
        data = to_data(full_person(), Person)
        assert data == {
            "name": "Zoë",
            "born": "1990-02-03",
            "seen": "2024-01-02T03:04:05.000006+05:30",
            "address": {"zip": "12345", "lines": ["1 Main St", "Flat 2"]},
            "tags": ["a", "b"],
            "scores": {"math": 1.5, "art": 3},
            "color": "green",
            "level": 2,
            "ident": "12345678-1234-5678-1234-567812345678",
            "amount": "-12.340",
            "pair": [7, "seven"],
            "history": ["2024-05-06T12:00:00+00:00", "2024-05-07T12:00:00+00:00"],
            "mood": "busy",
            "nickname": "z",
        }
        assert list(data) == [f.name for f in dataclasses.fields(Person)]
        assert type(data["level"]) is int

    def test_round_trip_example(self) -> None:
        person = full_person()
        back = through_json(person, Person)
        assert back == person
        assert back.seen.utcoffset() == person.seen.utcoffset()

    def test_wrong_nested_type_names_path_and_type(self) -> None:
        person = full_person()
        person.address = Address(12345)  # type: ignore[arg-type]
        with pytest.raises(PayloadError) as info:
            to_data(person, Person)
        assert info.value.field == "input.address.zip"
        assert "expected str, got int" in info.value.problem

    def test_naive_datetime_is_refused(self) -> None:
        with pytest.raises(PayloadError, match="naive") as info:
            to_data([NOON, NOON.replace(tzinfo=None)], list[datetime])
        assert info.value.field == "input[1]"

    def test_fractional_utc_offset_is_refused(self) -> None:
        odd = timezone(timedelta(microseconds=1))
        with pytest.raises(PayloadError, match="fraction of a second"):
            to_data(NOON.replace(tzinfo=odd), datetime)
        historic = NOON.replace(tzinfo=timezone(timedelta(minutes=19, seconds=32)))
        assert through_json(historic, datetime) == historic

    def test_datetime_is_not_a_date(self) -> None:
        with pytest.raises(PayloadError, match="expected date, got datetime"):
            to_data(NOON, date)

    @pytest.mark.parametrize("tp", [int, float])
    def test_bool_is_not_a_number(self, tp: type) -> None:
        with pytest.raises(PayloadError, match="bool"):
            to_data(True, tp)

    def test_int_subclasses_become_plain(self) -> None:
        assert type(to_data(Level.HIGH, int)) is int
        assert to_data(3, float) == 3

    @pytest.mark.parametrize("value", [float("nan"), float("inf")])
    def test_non_finite_float(self, value: float) -> None:
        with pytest.raises(PayloadError, match="not finite"):
            to_data(value, float)

    @pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("-Infinity"), Decimal("sNaN")])
    def test_non_finite_decimal(self, value: Decimal) -> None:
        with pytest.raises(PayloadError, match="not finite"):
            to_data(value, Decimal)

    def test_subclass_instance_is_refused(self) -> None:
        with pytest.raises(PayloadError, match="expected Point, got Point3"):
            to_data(Point3(1, 2.0, 3), Point)

    def test_container_types_are_checked(self) -> None:
        with pytest.raises(PayloadError, match="expected list"):
            to_data((1, 2), list[int])
        assert to_data((1, 2), Sequence[int]) == [1, 2]
        assert to_data({"b": 1}, Mapping[str, int]) == {"b": 1}
        with pytest.raises(PayloadError, match="keys must be str"):
            to_data({1: 1}, dict[str, int])
        with pytest.raises(PayloadError, match="exactly 2 items"):
            to_data((1, "a", 2), tuple[int, str])

    def test_any_and_object_pass_through(self) -> None:
        odd = {"x": [1, {2}]}
        assert to_data(odd, Any) is odd
        assert to_data(odd, object) is odd
        with pytest.raises(PayloadError) as info:
            JSON.encode(to_data({"a": [float("nan")]}, dict[str, Any]))
        assert info.value.field == "input.a[0]"

    def test_literal_and_enum(self) -> None:
        assert to_data("calm", Literal["calm", "busy"]) == "calm"
        with pytest.raises(PayloadError, match="'idle' is not allowed"):
            to_data("idle", Literal["calm", "busy"])
        with pytest.raises(PayloadError):
            to_data(True, Literal[1])
        assert to_data(Color.RED, Literal[Color.RED]) == "red"
        with pytest.raises(PayloadError, match="expected Color, got str"):
            to_data("red", Color)

    def test_union_refuses_values_that_would_come_back_as_another_type(self) -> None:
        text = "2024-05-06T12:00:00+00:00"
        assert to_data(NOON, datetime | str) == text
        assert to_data(text, str | datetime) == text
        with pytest.raises(PayloadError, match="read back as str"):
            to_data(NOON, str | datetime)

    def test_union_order_is_kept_per_annotation(self) -> None:
        # ``int | float == float | int``, yet each must keep its own order.
        assert type(from_data(3, int | float)) is int
        assert type(from_data(3.0, float | int)) is float
        assert type(from_data([3], list[int | float])[0]) is int  # type: ignore[index]
        assert type(from_data([3.0], list[float | int])[0]) is float  # type: ignore[index]

    def test_optional_reports_the_inner_problem(self) -> None:
        with pytest.raises(PayloadError) as info:
            to_data(Address(1), Address | None)  # type: ignore[arg-type]
        assert info.value.field == "input.zip"

    def test_cycle_through_dataclasses_is_refused(self) -> None:
        node = Node("a")
        node.children.append(node)
        with pytest.raises(PayloadError, match="nested deeper"):
            to_data(node, Node)

    def test_input_is_not_modified_on_failure(self) -> None:
        person = full_person()
        person.scores["bad"] = float("nan")
        before = dataclasses.replace(person, scores=dict(person.scores))
        with pytest.raises(PayloadError) as info:
            to_data(person, Person)
        assert info.value.field == "input.scores.bad"
        assert person.scores.keys() == before.scores.keys()

    def test_sets_encode_sorted(self) -> None:
        assert to_data({"c", "a", "b"}, set[str]) == ["a", "b", "c"]
        assert to_data(frozenset({3, 1}), frozenset[int]) == [1, 3]
        with pytest.raises(PayloadError, match="expected frozenset"):
            to_data({3, 1}, frozenset[int])


class TestFromData:
    def person_data(self) -> dict[str, Any]:
        return {"name": "a", "born": "2000-01-01", "seen": "2024-05-06T12:00:00Z"}

    def test_defaults_fill_missing_optional_fields(self) -> None:
        person = from_data(self.person_data(), Person)
        assert person == Person("a", date(2000, 1, 1), NOON)

    def test_missing_required_field(self) -> None:
        data = self.person_data()
        del data["born"]
        with pytest.raises(InputDecodeError) as info:
            from_data(data, Person)
        assert info.value.path == "input.born"
        assert "missing" in info.value.problem

    def test_unknown_field(self) -> None:
        data = {**self.person_data(), "address": {"zip": "1", "city": "x"}}
        with pytest.raises(InputDecodeError, match="unknown field 'city'") as info:
            from_data(data, Person)
        assert info.value.path == "input.address"

    def test_wrong_nested_type(self) -> None:
        data = {**self.person_data(), "address": {"zip": 12345}}
        with pytest.raises(InputDecodeError) as info:
            from_data(data, Person)
        assert info.value.path == "input.address.zip"
        assert "expected str, got int" in info.value.problem

    def test_deep_list_path(self) -> None:
        data = {"label": "r", "children": [{"label": "a"}, {"label": "b", "children": [{}]}]}
        with pytest.raises(InputDecodeError) as info:
            from_data(data, Node)
        assert info.value.path == "input.children[1].children[0].label"

    @pytest.mark.parametrize(
        ("data", "tp"),
        [
            (True, int),
            (False, float),
            (1, bool),
            (1.0, int),
            ("1", int),
            (None, str),
            ("x", None),
            (1, Literal[True]),
            (True, Literal[1]),
            ("blue", Color),
            (True, Level),
            (1.0, Level),
            ([1, 2, 3], tuple[int, int]),
            ([1], tuple[()]),
            ((1,), list[int]),
            ({"1": 1}, list[int]),
            ([1], dict[str, int]),
            ("2024-05-06T12:00:00", datetime),
            ("2024-05-06", datetime),
            ("2024-05-06T12:00:00Z", date),
            ("not-a-uuid", UUID),
            ("NaN", Decimal),
            (" 1", Decimal),
            ("1_000", Decimal),
            (1.5, Decimal),
            (b"x", list[bytes]),
            ({"x": "1"}, Other | None),
            ({"x": 1, "y": 2}, Other | None),
        ],
    )
    def test_refused(self, data: object, tp: object) -> None:
        with pytest.raises(InputDecodeError) as info:
            from_data(data, tp)
        assert info.value.path.startswith("input")

    @pytest.mark.parametrize(
        ("data", "tp", "expected"),
        [
            (3, float, 3),  # an int stays an int where float is declared (exact round trip)
            (None, Optional[int], None),  # noqa: UP045
            (4, int | None, 4),
            ("x", int | str, "x"),
            ("calm", Literal["calm", "busy"], "calm"),
            ("red", Literal[Color.RED], Color.RED),
            (2, Level, Level.HIGH),
            (3, Perm, Perm.READ | Perm.WRITE),
            ([1, 2], tuple[int, ...], (1, 2)),
            ([], tuple[()], ()),
            ([1, 1, 2], set[int], {1, 2}),
            ([1, 2], Sequence[int], [1, 2]),
            ({"a": 1}, Mapping[str, int], {"a": 1}),
            ({"a": [1]}, dict, {"a": [1]}),
            ([1, "a"], list, [1, "a"]),
            ("2024-05-06T12:00:00+00:00", datetime, NOON),
            (
                "{12345678-1234-5678-1234-567812345678}",
                UUID,
                UUID(int=0x12345678123456781234567812345678),
            ),
            ("1E+2", Decimal, Decimal(100)),
            (b"raw", bytes, b"raw"),
            (7, UserId, 7),
            (7, Annotated[int, "meta"], 7),
            ({"x": [1]}, Any, {"x": [1]}),
        ],
    )
    def test_accepted(self, data: object, tp: object, expected: object) -> None:
        result = from_data(data, tp)
        assert result == expected
        assert type(result) is type(expected)

    def test_union_errors_name_all_members(self) -> None:
        with pytest.raises(InputDecodeError) as info:
            from_data([1], int | str)
        assert "expected int, got list" in info.value.problem
        assert "expected str, got list" in info.value.problem

    def test_post_init_error_is_a_decode_error(self) -> None:
        assert from_data({"width": 3}, Derived) == Derived(3)
        assert from_data({"width": 3}, Derived).area == 9  # type: ignore[attr-defined]
        assert to_data(Derived(3), Derived) == {"width": 3}  # init=False fields are not stored
        with pytest.raises(InputDecodeError, match="width must not be negative"):
            from_data({"width": -1}, Derived)
        with pytest.raises(InputDecodeError, match="unknown field 'area'"):
            from_data({"width": 3, "area": 9}, Derived)

    def test_depth_limit(self) -> None:
        data: dict[str, Any] = {"label": "leaf"}
        for _ in range(MAX_DEPTH + 1):
            data = {"label": "x", "children": [data]}
        with pytest.raises(InputDecodeError, match="nested deeper"):
            from_data(data, Node)


class TestSpecialTypes:
    def test_generic_dataclass(self) -> None:
        box = Box(item=NOON, items=[NOON])
        assert to_data(box, Box[datetime]) == {
            "item": NOON.isoformat(),
            "items": [NOON.isoformat()],
        }
        assert through_json(box, Box[datetime]) == box
        with pytest.raises(InputDecodeError) as info:
            from_data({"item": 1, "items": [1, "x"]}, Box[int])
        assert info.value.path == "input.items[1]"
        assert from_data({"item": "x", "items": []}, Box) == Box("x", [])

    def test_typeddict(self) -> None:
        assert through_json({"title": "Up", "year": 2009}, Movie) == {"title": "Up", "year": 2009}
        assert from_data({"title": "Up"}, Movie) == {"title": "Up"}
        with pytest.raises(InputDecodeError, match="'title' is missing"):
            from_data({"year": 2009}, Movie)
        with pytest.raises(InputDecodeError, match="unknown field 'rating'"):
            from_data({"title": "Up", "rating": 5}, Movie)
        with pytest.raises(PayloadError) as info:
            to_data({"title": "Up", "year": "2009"}, Movie)
        assert info.value.field == "input.year"

    def test_pydantic_style_model(self) -> None:
        assert to_data(FakeModel(3), FakeModel) == {"n": 3}
        assert from_data({"n": 3}, FakeModel) == FakeModel(3)
        assert from_data({"m": [{"n": 1}]}, dict[str, list[FakeModel]]) == {"m": [FakeModel(1)]}
        with pytest.raises(InputDecodeError, match="n must be an int") as info:
            from_data({"m": [{"n": "1"}]}, dict[str, list[FakeModel]])
        assert info.value.path == "input.m[0]"
        with pytest.raises(PayloadError, match="expected FakeModel, got dict"):
            to_data({"n": 3}, FakeModel)

    def test_bytes_only_as_the_whole_input(self) -> None:
        assert to_data(bytearray(b"ab"), bytes) == b"ab"
        with pytest.raises(PayloadError, match="whole input"):
            to_data([b"ab"], list[bytes])

    def test_codec_for(self) -> None:
        assert codec_for(str) is TEXT
        assert codec_for(bytes) is BYTES
        for tp in (int, Person, list[str], Any, str | None, Optional[bytes]):  # noqa: UP045
            assert codec_for(tp) is JSON


class TestCheckSupported:
    @pytest.mark.parametrize(
        "tp",
        [Person, Node, Box[int], Movie, FakeModel, Any, str, bytes, Derived, dict, Perm],
    )
    def test_supported(self, tp: object) -> None:
        check_supported(tp)

    @pytest.mark.parametrize(
        ("tp", "path", "words"),
        [
            (Plain, "input", "not a supported type"),
            (HasPlain, "input.thing", "Plain is not a supported type"),
            (dict[int, str], "input", "keys"),
            (list[bytes], "input[*]", "whole input"),
            (bytes | None, "input", "whole input"),
            (set[Point], "input[*]", "not hashable"),
            (frozenset[list[int]], "input[*]", "not hashable"),
            (NeedsInitVar, "input", "InitVar"),
            (Dangling, "input", "cannot be resolved"),
            (complex, "input", "not a supported type"),
            (dict[str, Plain], "input[*]", "Plain"),
            (tuple[int, Plain], "input[1]", "Plain"),
        ],
    )
    def test_unsupported(self, tp: object, path: str, words: str) -> None:
        with pytest.raises(ValidationError, match=words) as info:
            check_supported(tp)
        assert info.value.field == path
        assert not isinstance(info.value, PayloadError)

    def test_enum_values_must_be_json_scalars(self) -> None:
        class Planet(enum.Enum):
            EARTH = (1.0, 2.0)

        with pytest.raises(ValidationError, match="enum and Literal values"):
            check_supported(list[Planet])

    def test_unsupported_type_fails_conversion_too(self) -> None:
        with pytest.raises(ValidationError):
            to_data(Plain(), Plain)
        with pytest.raises(ValidationError):
            from_data({}, Plain)


# --- properties -------------------------------------------------------------------------------

clean_text = st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
any_text = st.text(
    alphabet=st.characters(exclude_categories=())
    | st.sampled_from(["\x00", "\ud800", "\udfff", "\U0001f600"])
)
# Offsets in whole seconds (historic zones have some); fractional ones are tested apart.
offsets = st.integers(min_value=-86399, max_value=86399).map(lambda s: timedelta(seconds=s))
# Hypothesis takes naive bounds and applies the generated zone itself.
early, late = datetime(1900, 1, 1), datetime(2200, 1, 1)  # noqa: DTZ001
aware = st.datetimes(min_value=early, max_value=late, timezones=offsets.map(timezone))
finite = st.floats(allow_nan=False, allow_infinity=False)
addresses = st.builds(Address, zip=clean_text, lines=st.lists(clean_text, max_size=3))
people = st.builds(
    Person,
    name=clean_text,
    born=st.dates(),
    seen=aware,
    address=st.none() | addresses,
    tags=st.frozensets(clean_text, max_size=4),
    scores=st.dictionaries(clean_text, finite | st.integers(), max_size=4),
    color=st.sampled_from(Color),
    level=st.sampled_from(Level),
    ident=st.uuids(),
    amount=st.decimals(allow_nan=False, allow_infinity=False),
    pair=st.tuples(st.integers(), clean_text),
    history=st.lists(aware, max_size=3).map(tuple),
    mood=st.sampled_from(["calm", "busy"]),
    nickname=st.none() | clean_text,
)
trees = st.recursive(
    st.builds(Node, label=clean_text, children=st.just([])),
    lambda inner: st.builds(Node, label=clean_text, children=st.lists(inner, max_size=3)),
    max_leaves=20,
)


@given(people)
def test_people_round_trip_through_json(person: Person) -> None:
    back = through_json(person, Person)
    assert back == person
    assert back.seen.utcoffset() == person.seen.utcoffset()


@given(trees)
def test_trees_round_trip_through_json(tree: Node) -> None:
    assert through_json(tree, Node) == tree


@given(st.lists(st.tuples(st.integers() | finite | clean_text, st.none() | aware), max_size=5))
def test_union_lists_round_trip(items: list[tuple[int | float | str, datetime | None]]) -> None:
    tp = list[tuple[int | float | str, datetime | None]]
    assert through_json(items, tp) == items


@given(
    st.datetimes(
        min_value=early,
        max_value=late,
        timezones=st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)).map(
            timezone
        ),
    )
)
def test_any_offset_round_trips_exactly_or_is_refused(moment: datetime) -> None:
    try:
        back = through_json(moment, datetime)
    except PayloadError as exc:
        assert "fraction of a second" in exc.problem
        assert moment.utcoffset().microseconds  # type: ignore[union-attr]
        return
    assert back == moment
    assert back.utcoffset() == moment.utcoffset()  # type: ignore[attr-defined]


@given(any_text)
def test_any_text_round_trips_exactly_or_is_refused(text: str) -> None:
    bad = "\x00" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    for tp, codec, wrap in ((str, TEXT, text), (Address, JSON, Address(text, [text]))):
        try:
            data = codec.encode(to_data(wrap, tp))
        except PayloadError:
            assert bad
            continue
        assert not bad
        assert from_data(codec.decode(data), tp) == wrap
    if not bad:
        assert TEXT.encode(text) == text.encode("utf-8")
