"""Typed values to JSON-shaped data (acta.shape.to_data), and round trips through JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shape_support import (
    NOON,
    Address,
    Color,
    Level,
    Node,
    Person,
    Point,
    Point3,
    full_person,
    through_json,
)

from acta.codec import JSON, TEXT
from acta.errors import PayloadError
from acta.shape import from_data, to_data


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
