"""What annotations mean (acta.annotation): special kinds of type, the codec of an input,
and the definition-time check (imported through acta.shape, as callers do)."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any, Optional

import pytest
from shape_support import (
    NOON,
    Box,
    Dangling,
    Derived,
    FakeModel,
    HasPlain,
    Movie,
    NeedsInitVar,
    Node,
    Perm,
    Person,
    Plain,
    Point,
    through_json,
)

from acta.codec import BYTES, JSON, TEXT
from acta.errors import InputDecodeError, PayloadError, ValidationError
from acta.shape import check_supported, codec_for, from_data, to_data


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
