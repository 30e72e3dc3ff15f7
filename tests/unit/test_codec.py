"""Payload codecs, the codec registry and the size cap."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acta.codec import (
    BYTES,
    DEFAULT_PAYLOAD_CAP,
    JSON,
    MAX_DEPTH,
    TEXT,
    Codec,
    CodecRegistry,
    check_size,
    codecs,
    decode_value,
    encode_value,
    join_key,
)
from acta.errors import (
    InputDecodeError,
    PayloadError,
    PayloadTooLargeError,
    UnknownCodecError,
    ValidationError,
)

# Any code point, lone surrogates included (hypothesis leaves them out unless told), with the
# troublesome ones drawn often so every run meets them.
any_text = st.text(
    alphabet=st.characters(exclude_categories=())
    | st.sampled_from(["\x00", "\ud800", "\udfff", "\U0001f600", "\u2028", "\\", '"'])
)
clean_text = st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | clean_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(clean_text, inner, max_size=4),
    max_leaves=30,
)


def unstorable(text: str) -> bool:
    return "\x00" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def nested_lists(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


class TestJsonEncode:
    def test_compact_ordered_and_unescaped(self) -> None:
        data = JSON.encode({"z": 1, "a": [True, None, 1.5], "é": "ü€😀"})
        assert data == '{"z":1,"a":[true,null,1.5],"é":"ü€😀"}'.encode()

    def test_tuple_becomes_list(self) -> None:
        assert JSON.decode(JSON.encode({"t": (1, 2)})) == {"t": [1, 2]}

    def test_big_ints_are_kept_exactly(self) -> None:
        big = 2**200 + 7
        assert JSON.decode(JSON.encode([big, -big])) == [big, -big]

    def test_int_too_long_to_write_is_refused(self) -> None:
        limit = sys.get_int_max_str_digits()
        if limit == 0:
            pytest.skip("int digit limit is disabled in this interpreter")
        with pytest.raises(PayloadError) as info:
            JSON.encode({"n": 10 ** (limit + 10)})
        assert info.value.field == "input.n"

    @pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
    def test_non_finite_floats_are_refused_with_path(self, number: float) -> None:
        with pytest.raises(PayloadError) as info:
            JSON.encode({"items": [{"name": "a"}, {"name": "b", "score": number}]})
        assert info.value.field == "input.items[1].score"
        assert "not finite" in info.value.problem

    def test_custom_field_name_prefixes_the_path(self) -> None:
        with pytest.raises(PayloadError) as info:
            JSON.encode([float("nan")], field="result")
        assert info.value.field == "result[0]"

    @pytest.mark.parametrize("bad", ["a\x00b", "x\ud800", "\udfff"])
    def test_nul_and_lone_surrogates_in_strings(self, bad: str) -> None:
        with pytest.raises(PayloadError) as info:
            JSON.encode({"items": ["ok", {"name": bad}]})
        assert info.value.field == "input.items[1].name"

    @pytest.mark.parametrize("bad", ["k\x00", "k\ud83d"])
    def test_nul_and_lone_surrogates_in_keys(self, bad: str) -> None:
        with pytest.raises(PayloadError) as info:
            JSON.encode({"outer": {bad: 1}})
        assert info.value.field == "input.outer"
        assert "key" in info.value.problem

    def test_paired_surrogates_as_real_characters_are_fine(self) -> None:
        assert JSON.decode(JSON.encode("😀")) == "😀"

    @pytest.mark.parametrize("key", [1, 1.5, None, True, ("a",)])
    def test_non_str_keys_are_refused(self, key: object) -> None:
        with pytest.raises(PayloadError, match="keys must be strings"):
            JSON.encode({key: 1})

    @pytest.mark.parametrize("value", [{1, 2}, b"x", object(), 1j, frozenset()])
    def test_non_json_values_are_refused(self, value: object) -> None:
        with pytest.raises(PayloadError) as info:
            JSON.encode({"a": [value]})
        assert info.value.field == "input.a[0]"
        assert type(value).__name__ in info.value.problem

    def test_odd_keys_are_quoted_in_paths(self) -> None:
        with pytest.raises(PayloadError) as info:
            JSON.encode({"a b": {"3": [float("nan")]}})
        assert info.value.field == "input['a b']['3'][0]"

    def test_depth_limit_is_inclusive(self) -> None:
        assert JSON.decode(JSON.encode(nested_lists(MAX_DEPTH))) == nested_lists(MAX_DEPTH)
        with pytest.raises(PayloadError, match="deeper than 64"):
            JSON.encode(nested_lists(MAX_DEPTH + 1))

    def test_depth_counts_objects_too(self) -> None:
        value: Any = 1
        for _ in range(MAX_DEPTH + 1):
            value = {"a": value}
        with pytest.raises(PayloadError):
            JSON.encode(value)

    def test_cycle_is_refused_not_looped(self) -> None:
        loop: list[Any] = []
        loop.append(loop)
        with pytest.raises(PayloadError, match="cycle"):
            JSON.encode(loop)

    def test_first_bad_value_in_document_order_is_reported(self) -> None:
        with pytest.raises(PayloadError) as info:
            JSON.encode([1, float("nan"), "\x00"])
        assert info.value.field == "input[1]"

    @given(json_values)
    def test_round_trip(self, value: object) -> None:
        data = JSON.encode(value)
        assert JSON.decode(data) == value
        # Same bytes as the standard library would write with the same options.
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        assert data == expected.encode("utf-8")

    @given(any_text)
    def test_any_text_round_trips_or_is_refused(self, text: str) -> None:
        try:
            data = JSON.encode({"t": text})
        except PayloadError:
            assert unstorable(text)
            return
        assert not unstorable(text)
        assert JSON.decode(data) == {"t": text}


class TestJsonDecode:
    def test_invalid_utf8(self) -> None:
        with pytest.raises(InputDecodeError, match="UTF-8"):
            JSON.decode(b'"\xff"')

    @pytest.mark.parametrize("data", [b"", b"{", b"[1,]", b"{'a': 1}", b"\xef\xbb\xbf{}"])
    def test_invalid_json(self, data: bytes) -> None:
        with pytest.raises(InputDecodeError, match="not valid JSON"):
            JSON.decode(data)

    @pytest.mark.parametrize("data", [b"NaN", b"[Infinity]", b'{"a":-Infinity}'])
    def test_non_finite_constants(self, data: bytes) -> None:
        with pytest.raises(InputDecodeError):
            JSON.decode(data)

    @pytest.mark.parametrize("data", [rb'{"a":"\u0000"}', rb'{"a":["\ud800"]}', rb'{"\u0000":1}'])
    def test_escaped_nul_or_surrogate(self, data: bytes) -> None:
        with pytest.raises(InputDecodeError) as info:
            JSON.decode(data)
        assert info.value.path.startswith("input")

    def test_escaped_surrogate_pair_is_one_character(self) -> None:
        assert JSON.decode(rb'"\ud83d\ude00"') == "😀"

    def test_memoryview_input(self) -> None:
        assert JSON.decode(memoryview(b"[1]")) == [1]  # type: ignore[arg-type]

    def test_deep_input_is_a_decode_error(self) -> None:
        with pytest.raises(InputDecodeError):
            JSON.decode(b"[" * 100_000 + b"]" * 100_000)


class TestTextAndBytes:
    @given(any_text)
    def test_text_round_trips_byte_exact_or_is_refused(self, text: str) -> None:
        try:
            data = TEXT.encode(text)
        except PayloadError:
            assert unstorable(text)
            return
        assert not unstorable(text)
        assert data == text.encode("utf-8")
        assert TEXT.decode(data) == text

    @pytest.mark.parametrize("value", [b"x", 1, None, ["a"]])
    def test_text_needs_str(self, value: object) -> None:
        with pytest.raises(PayloadError, match="expected str"):
            TEXT.encode(value)

    def test_text_decode_refuses_bad_utf8_and_nul(self) -> None:
        with pytest.raises(InputDecodeError, match="UTF-8"):
            TEXT.decode(b"\xc3")
        with pytest.raises(InputDecodeError, match="NUL"):
            TEXT.decode(b"a\x00")

    @given(st.binary())
    def test_bytes_round_trip(self, raw: bytes) -> None:
        for value in (raw, bytearray(raw), memoryview(raw)):
            data = BYTES.encode(value)
            assert type(data) is bytes
            assert data == raw
            assert BYTES.decode(data) == raw

    def test_bytes_needs_bytes(self) -> None:
        with pytest.raises(PayloadError, match="expected bytes, got str"):
            BYTES.encode("abc")


class FakeCodec:
    def __init__(self, name: str = "upper", code: int = 200) -> None:
        self.name = name
        self.code = code

    def encode(self, value: object) -> bytes:
        return str(value).upper().encode()

    def decode(self, data: bytes) -> object:
        return data.decode().lower()


class TestRegistry:
    def test_built_ins(self) -> None:
        registry = CodecRegistry()
        assert [(c.name, c.code) for c in (JSON, TEXT, BYTES)] == [
            ("json", 1),
            ("text", 2),
            ("bytes", 3),
        ]
        for codec in (JSON, TEXT, BYTES):
            assert isinstance(codec, Codec)
            assert registry.by_name(codec.name) is codec
            assert registry.by_code(codec.code) is codec
        assert codecs.by_code(1) is JSON
        assert registry.names() == ("json", "text", "bytes")

    def test_register_user_codec(self) -> None:
        registry = CodecRegistry()
        codec = FakeCodec()
        assert registry.register(codec) is codec
        assert registry.by_name("upper") is codec
        assert registry.by_code(200) is codec
        assert registry.register(codec) is codec  # the same object again is harmless
        assert CodecRegistry().names() == ("json", "text", "bytes")  # registries are separate

    @pytest.mark.parametrize("code", [0, 1, 3, 4, 127, 256, -1, True, 200.0, "200"])
    def test_user_codes_must_be_128_to_255(self, code: object) -> None:
        with pytest.raises(ValidationError) as info:
            CodecRegistry().register(FakeCodec(code=code))  # type: ignore[arg-type]
        assert info.value.field == "codec.code"

    @pytest.mark.parametrize("code", [128, 255])
    def test_code_bounds_are_inclusive(self, code: int) -> None:
        registry = CodecRegistry()
        registry.register(FakeCodec(code=code))
        assert registry.by_code(code).code == code

    @pytest.mark.parametrize("name", ["", "Upper", "1x", "a b", "x" * 33, "json!", None])
    def test_names_must_be_lowercase_words(self, name: object) -> None:
        with pytest.raises(ValidationError) as info:
            CodecRegistry().register(FakeCodec(name=name))  # type: ignore[arg-type]
        assert info.value.field == "codec.name"

    def test_duplicates_are_refused(self) -> None:
        registry = CodecRegistry()
        registry.register(FakeCodec("one", 130))
        with pytest.raises(ValidationError, match="exists"):
            registry.register(FakeCodec("one", 131))
        with pytest.raises(ValidationError, match="taken by 'one'"):
            registry.register(FakeCodec("two", 130))
        with pytest.raises(ValidationError, match="exists"):
            registry.register(FakeCodec("json", 140))
        assert registry.names() == ("json", "text", "bytes", "one")

    def test_the_same_name_and_code_again_replaces_the_codec(self) -> None:
        # A reloaded module or a notebook cell run twice makes a new, equal-looking object.
        registry = CodecRegistry()
        first, second = FakeCodec("one", 130), FakeCodec("one", 130)
        registry.register(first)
        assert registry.register(second) is second
        assert registry.by_name("one") is second and registry.by_code(130) is second
        assert registry.names() == ("json", "text", "bytes", "one")

    def test_missing_methods_are_refused(self) -> None:
        class Half:
            name = "half"
            code = 150

            def encode(self, value: object) -> bytes:
                return b""

        with pytest.raises(ValidationError, match="encode or decode"):
            CodecRegistry().register(Half())  # type: ignore[arg-type]

    def test_unknown_lookups(self) -> None:
        with pytest.raises(UnknownCodecError, match="registered: json, text, bytes") as found:
            CodecRegistry().by_name("yaml")
        assert isinstance(found.value, ValidationError) and found.value.field == "codec"
        with pytest.raises(InputDecodeError, match="codec code 77"):
            CodecRegistry().by_code(77)


class Broken:
    name = "broken"
    code = 201

    def encode(self, value: object) -> bytes:
        if value == "str":
            return "not bytes"  # type: ignore[return-value]
        raise TypeError("cannot handle this")

    def decode(self, data: bytes) -> object:
        raise KeyError("no table")


class TestEncodeDecodeValue:
    def test_built_ins_get_the_field(self) -> None:
        with pytest.raises(PayloadError) as info:
            encode_value(JSON, {"a": [float("nan")]}, "result")
        assert info.value.field == "result.a[0]"
        with pytest.raises(InputDecodeError) as decode_info:
            decode_value(JSON, b"{", "result")
        assert decode_info.value.path == "result"
        assert decode_value(TEXT, encode_value(TEXT, "hé", "result"), "result") == "hé"

    def test_user_codec_round_trip(self) -> None:
        codec = FakeCodec()
        assert encode_value(codec, "abc") == b"ABC"
        assert decode_value(codec, b"ABC") == "abc"

    def test_user_codec_failures_are_wrapped(self) -> None:
        with pytest.raises(PayloadError, match="'broken' could not encode") as info:
            encode_value(Broken(), 1, "result")
        assert info.value.field == "result"
        with pytest.raises(PayloadError, match="returned str"):
            encode_value(Broken(), "str")
        with pytest.raises(InputDecodeError, match="could not decode") as decode_info:
            decode_value(Broken(), b"x", "result")
        assert decode_info.value.path == "result"


class TestSizeCap:
    def test_default(self) -> None:
        assert DEFAULT_PAYLOAD_CAP == 1024 * 1024

    def test_exactly_cap_passes_and_one_more_fails(self) -> None:
        data = b"x" * 10
        assert check_size(data, 10, "input") is data
        with pytest.raises(PayloadTooLargeError) as info:
            check_size(data + b"y", 10, "input")
        assert info.value.field == "input"
        assert "11 bytes" in str(info.value)
        assert "10 bytes" in str(info.value)
        assert isinstance(info.value, PayloadError)


@pytest.mark.parametrize(
    ("key", "path"),
    [("name", "in.name"), (3, "in[3]"), ("a-b", "in['a-b']"), ("", "in['']"), ("2x", "in['2x']")],
)
def test_join_key(key: str | int, path: str) -> None:
    assert join_key("in", key) == path
