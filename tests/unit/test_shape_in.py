"""JSON-shaped data back to typed values, strictly (acta.shape.from_data)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal, Optional
from uuid import UUID

import pytest
from shape_support import NOON, Color, Derived, Level, Node, Other, Perm, Person, UserId

from acta.codec import MAX_DEPTH
from acta.errors import InputDecodeError
from acta.shape import from_data, to_data


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
