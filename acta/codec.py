"""Payload codecs: how job inputs and results become the bytes stored in the database.

A codec turns an already-shaped value (see ``acta.shape``) into bytes and back. The JSON codec
is strict on purpose: whatever it accepts must come back unchanged from any supported database,
so it refuses NaN and infinities, lone surrogates, NUL characters (PostgreSQL text and jsonb
cannot hold them), non-string keys and deep nesting before it writes a single byte. This module
also holds the codec registry and the payload size cap. It must not know about jobs, handlers
or providers, and it must not import anything from acta except ``acta.errors``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from acta.errors import (
    InputDecodeError,
    PayloadError,
    PayloadTooLargeError,
    UnknownCodecError,
    ValidationError,
)

__all__ = [
    "BYTES",
    "DEFAULT_PAYLOAD_CAP",
    "JSON",
    "MAX_DEPTH",
    "TEXT",
    "BytesCodec",
    "Codec",
    "CodecRegistry",
    "FunctionCodec",
    "JsonCodec",
    "TextCodec",
    "check_size",
    "codecs",
    "decode_value",
    "encode_value",
    "join_key",
]

DEFAULT_PAYLOAD_CAP = 1_048_576
"""Largest encoded payload accepted by default, in bytes (1 MiB)."""

MAX_DEPTH = 64
"""Deepest container nesting a JSON payload may have; the outermost container is level 1."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_CODEC_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,31}")
_USER_CODES = range(128, 256)

# A location inside a payload, kept as a parent-linked chain so that the walk builds no strings
# unless it has an error to report: None is the root, otherwise (parent, key or index).
_Where = tuple["_Where", str | int] | None


@runtime_checkable
class Codec(Protocol):
    """What acta needs from a payload codec.

    ``name`` is what users choose a codec by; ``code`` is the small integer stored next to each
    payload, so it must never change once data has been written with it.
    """

    @property
    def name(self) -> str: ...

    @property
    def code(self) -> int: ...

    def encode(self, value: object) -> bytes:
        """Turn a value into bytes, or raise ``PayloadError`` saying what cannot be stored."""
        ...

    def decode(self, data: bytes) -> object:
        """Turn stored bytes back into a value, or raise ``InputDecodeError``."""
        ...


def join_key(path: str, key: str | int) -> str:
    """Extend a payload path: ``.name`` for identifier keys, ``[3]`` or ``['a b']`` otherwise."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{key!r}]"


def _render(field: str, where: _Where) -> str:
    keys: list[str | int] = []
    while where is not None:
        where, key = where
        keys.append(key)
    path = field
    for key in reversed(keys):
        path = join_key(path, key)
    return path


def _text_problem(text: str) -> str | None:
    """Say why a string cannot be stored, or return None when it can."""
    if "\x00" in text:
        return "contains the NUL character U+0000"
    if not text.isascii() and _SURROGATE.search(text) is not None:
        return "contains a lone surrogate code point"
    return None


_TEXT_RULE = "text must be valid Unicode without U+0000"


def _json_problem(value: object) -> tuple[_Where, str, str] | None:
    """Walk a value once, without recursion, and report the first thing JSON cannot keep.

    Returns ``(where, problem, rule)`` or None. Children are visited in document order so the
    reported location is the first bad one a reader would find.
    """
    stack: list[tuple[object, int, _Where]] = [(value, 0, None)]
    while stack:
        item, enclosing, where = stack.pop()
        kind = type(item)
        if isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                return where, f"string {problem}", _TEXT_RULE
        elif item is None or kind is bool:
            continue
        elif isinstance(item, int):
            # Big integers are valid JSON and are kept exactly; only numbers too long for
            # Python's int-to-text limit are refused, because they could not be written.
            if item.bit_length() > 64:
                try:
                    int.__repr__(item)
                except ValueError:
                    return where, "integer has too many digits to write", "keep integers short"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return where, f"number {item!r} is not finite", "JSON has no NaN or Infinity"
        elif isinstance(item, dict | list | tuple):
            level = enclosing + 1
            if level > MAX_DEPTH:
                return (
                    where,
                    f"nesting is deeper than {MAX_DEPTH} levels (or the value contains a cycle)",
                    f"at most {MAX_DEPTH} nested lists and objects",
                )
            if isinstance(item, dict):
                children: list[tuple[object, int, _Where]] = []
                for key, child in item.items():
                    if not isinstance(key, str):
                        return (
                            where,
                            f"object key {key!r} is a {type(key).__name__}",
                            "object keys must be strings",
                        )
                    problem = _text_problem(key)
                    if problem is not None:
                        return where, f"object key {key!r} {problem}", _TEXT_RULE
                    children.append((child, level, (where, key)))
                stack.extend(reversed(children))
            else:
                stack.extend(
                    (item[index], level, (where, index)) for index in range(len(item) - 1, -1, -1)
                )
        else:
            return (
                where,
                f"a {kind.__name__} is not a JSON value",
                "allowed: dict, list, tuple, str, int, float, bool, None",
            )
    return None


def _refuse_constant(name: str) -> object:
    raise ValueError(f"the constant {name} is not allowed")


def _as_bytes(data: bytes) -> bytes:
    # Drivers may hand back memoryview or bytearray for binary columns.
    return data if type(data) is bytes else bytes(data)


# Built once: json.dumps and json.loads with any non-default option construct a new encoder
# or decoder on every call, a few microseconds each, paid for every enqueued job and every run.
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=False, allow_nan=False
)
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


class JsonCodec:
    """Strict UTF-8 JSON: compact, key order kept, non-ASCII written as itself.

    Integers of any size are kept exactly, as JSON allows; readers in other languages (and
    JavaScript above 2**53) may not, so cross-language payloads should keep to 64 bits.
    Tuples are written as arrays and come back as lists.
    """

    name = "json"
    code = 1

    def encode(self, value: object, field: str = "input") -> bytes:
        found = _json_problem(value)
        if found is not None:
            where, problem, rule = found
            raise PayloadError(_render(field, where), problem, rule)
        return _ENCODER.encode(value).encode("utf-8")

    def decode(self, data: bytes, field: str = "input") -> object:
        try:
            text = _as_bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputDecodeError(field, f"stored JSON is not valid UTF-8: {exc.reason}") from exc
        try:
            value = _DECODER.decode(text)
        except RecursionError as exc:
            raise InputDecodeError(field, "stored JSON is nested too deeply to read") from exc
        except ValueError as exc:
            raise InputDecodeError(field, f"stored data is not valid JSON: {exc}") from exc
        # Only a \u escape can smuggle NUL or a lone surrogate into valid UTF-8 JSON, so the
        # full walk runs only when one is present, keeping ordinary decodes cheap.
        if "\\u" in text:
            found = _json_problem(value)
            if found is not None:
                where, problem, _ = found
                raise InputDecodeError(_render(field, where), f"stored JSON {problem}")
        return value


class TextCodec:
    """A single string stored as UTF-8, for handlers whose input is ``str``."""

    name = "text"
    code = 2

    def encode(self, value: object, field: str = "input") -> bytes:
        if not isinstance(value, str):
            raise PayloadError(field, f"expected str, got {type(value).__name__}", "text codec")
        problem = _text_problem(value)
        if problem is not None:
            raise PayloadError(field, f"string {problem}", _TEXT_RULE)
        return value.encode("utf-8")

    def decode(self, data: bytes, field: str = "input") -> object:
        raw = _as_bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputDecodeError(field, f"stored text is not valid UTF-8: {exc.reason}") from exc
        if "\x00" in text:
            raise InputDecodeError(field, "stored text contains the NUL character U+0000")
        return text


class BytesCodec:
    """Raw bytes kept as they are, for handlers whose input is ``bytes``."""

    name = "bytes"
    code = 3

    def encode(self, value: object, field: str = "input") -> bytes:
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        raise PayloadError(
            field,
            f"expected bytes, got {type(value).__name__}",
            "bytes codec takes bytes, bytearray or memoryview",
        )

    def decode(self, data: bytes, field: str = "input") -> object:
        return _as_bytes(data)


@dataclass(frozen=True, slots=True)
class FunctionCodec:
    """A codec made of two functions, for codecs that need no class of their own::

        FunctionCodec("msgpack", 130, encode=msgpack.packb, decode=msgpack.unpackb)

    ``encode`` takes the shaped value (dicts, lists, str, numbers, bool, None; bytes for a
    ``bytes`` input) and returns bytes; ``decode`` takes the stored bytes and returns the value.
    """

    name: str
    code: int
    encode: Callable[[object], bytes]
    decode: Callable[[bytes], object]


JSON = JsonCodec()
TEXT = TextCodec()
BYTES = BytesCodec()
_BUILT_IN: tuple[Codec, ...] = (JSON, TEXT, BYTES)


class CodecRegistry:
    """Codecs known to one application, looked up by name (API) or by code (stored rows).

    Codes 1-3 belong to the built-ins and 4-127 are kept for future built-ins; user codecs take
    codes 128-255. A code, once used for stored data, must keep meaning the same codec.
    """

    def __init__(self) -> None:
        self._by_name: dict[str, Codec] = {}
        self._by_code: dict[int, Codec] = {}
        for codec in _BUILT_IN:
            self._by_name[codec.name] = codec
            self._by_code[codec.code] = codec

    def register(self, codec: Codec) -> Codec:
        """Add a user codec and return it. The same codec again (the same object, or an equal
        one) is a no-op; another object under the same name *and* code replaces the registered
        one, as a reloaded module or a notebook cell run twice makes. A name or code taken by
        another codec is refused: a stored row names its codec by code."""
        name, code = getattr(codec, "name", None), getattr(codec, "code", None)
        known = self._by_name.get(name) if isinstance(name, str) else None
        if known is not None and (known is codec or known == codec) and known.code == code:
            return known
        again = known is not None and known.code == code and known.code in _USER_CODES
        if not isinstance(name, str) or _CODEC_NAME.fullmatch(name) is None:
            raise ValidationError(
                "codec.name",
                f"{name!r} is not a valid codec name",
                "1-32 characters: a lowercase letter, then lowercase letters, digits, _ . -",
            )
        if type(code) is not int or code not in _USER_CODES:
            raise ValidationError(
                "codec.code",
                f"{code!r} is not a user codec code",
                "user codecs use an int from 128 to 255; 1-127 are reserved for acta",
            )
        if not (
            callable(getattr(codec, "encode", None)) and callable(getattr(codec, "decode", None))
        ):
            raise ValidationError("codec", f"{name!r} lacks encode or decode", "see Codec")
        if name in self._by_name and not again:
            raise ValidationError("codec.name", f"a codec named {name!r} exists", "unique names")
        if code in self._by_code and not again:
            taken = self._by_code[code].name
            raise ValidationError(
                "codec.code", f"code {code} is taken by {taken!r}", "unique codes"
            )
        self._by_name[name] = codec
        self._by_code[code] = codec
        return codec

    def by_name(self, name: str) -> Codec:
        """The codec called ``name``; an UnknownCodecError lists the known names otherwise."""
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            known = ", ".join(self._by_name)
            raise UnknownCodecError(
                "codec",
                f"no codec named {name!r} is registered",
                f"registered: {known}; add one with acta.codecs.register(...) or "
                "Acta(codecs=[...])",
            ) from None

    def resolve(self, codec: str | Codec) -> Codec:
        """What a ``codec=`` option names: a registered name, or a codec object (registered
        here if it is not yet, so its rows decode in every process that declares the job)."""
        if isinstance(codec, str):
            return self.by_name(codec)
        return self.register(codec)

    def by_code(self, code: int) -> Codec:
        """The codec a stored row names; unknown codes mean the row cannot be decoded here."""
        try:
            return self._by_code[code]
        except (KeyError, TypeError):
            raise InputDecodeError(
                "",
                f"stored payload uses codec code {code!r}, which is not registered in this "
                "process (register the codec that wrote it)",
            ) from None

    def names(self) -> tuple[str, ...]:
        """Registered codec names, built-ins first."""
        return tuple(self._by_name)


codecs = CodecRegistry()
"""The process-wide registry used when no other is given."""


def encode_value(codec: Codec, value: object, field: str = "input") -> bytes:
    """Encode with any codec, reporting problems as ``PayloadError`` under ``field``.

    Built-in codecs take the field name so paths read ``result.items[2]``; a user codec is
    called as the protocol says, and whatever it raises is wrapped so callers see one error
    type. Its output must be bytes.
    """
    if isinstance(codec, JsonCodec | TextCodec | BytesCodec):
        return codec.encode(value, field=field)
    try:
        data = codec.encode(value)
    except PayloadError:
        raise
    except Exception as exc:  # a user codec may fail in any way; the job must not
        raise PayloadError(
            field, f"codec {codec.name!r} could not encode the value: {exc}"
        ) from exc
    if type(data) is not bytes:
        raise PayloadError(
            field,
            f"codec {codec.name!r} returned {type(data).__name__}",
            "encode must return bytes",
        )
    return data


def decode_value(codec: Codec, data: bytes, field: str = "input") -> object:
    """Decode with any codec, reporting problems as ``InputDecodeError`` under ``field``."""
    if isinstance(codec, JsonCodec | TextCodec | BytesCodec):
        return codec.decode(data, field=field)
    try:
        return codec.decode(data)
    except InputDecodeError:
        raise
    except Exception as exc:
        raise InputDecodeError(field, f"codec {codec.name!r} could not decode: {exc}") from exc


def check_size(data: bytes, cap: int, field: str) -> bytes:
    """Return ``data`` unchanged if it is at most ``cap`` bytes, else refuse it whole."""
    size = len(data)
    if size > cap:
        raise PayloadTooLargeError(
            field,
            f"encoded payload is {size} bytes",
            f"the cap is {cap} bytes; payloads are refused, never truncated",
        )
    return data
