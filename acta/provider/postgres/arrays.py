"""Lists sent as binary PostgreSQL arrays, with a quick path for the batch statements' id lists.

acta's batch statements (enqueue, claim, start, settle) send one list per column. psycopg's
binary list dumper looks at every element of an int list twice per statement to choose the
smallest integer type that holds them all, then packs the elements one by one in Python: in a
profiled drain that was about a tenth of the worker's CPU. acta's SQL casts every array
parameter to the type it means (``:ids::bigint[]``), so a flat list of ints can always go as
``bigint[]``: this dumper packs such a list with one ``struct`` call. Any other list (text,
bytes, booleans, nested, all NULL, or ints beyond 64 bits) goes through psycopg's own dumper.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from itertools import chain, repeat
from typing import Any

from psycopg import errors
from psycopg.abc import Buffer, DumperKey
from psycopg.adapt import PyFormat
from psycopg.types.array import BaseListDumper, ListBinaryDumper

_INT8_OID = 20
_INT8_ARRAY_OID = 1016
# Array header: dimensions, has-NULL flag, element type; then size and lower bound of the one
# dimension. Each element: its length (8, or -1 for NULL) and, unless NULL, 8 bytes.
_HEAD = struct.Struct("!iiiii")
_ELEMENT = struct.Struct("!iq")
_NULL = struct.pack("!i", -1)
_WITH_NULL = frozenset({int, type(None)})


class _Int8Key:
    """The dumper cache's key for flat int lists; psycopg's own keys never name this class."""


@lru_cache(maxsize=256)
def _elements(count: int) -> struct.Struct:
    """The packing of ``count`` non-NULL bigint elements (batches come in a few sizes)."""
    return struct.Struct("!" + "iq" * count)


def _ints(values: list[Any]) -> bool:
    """Whether ``values`` is a flat list of plain ints, maybe with NULLs (not booleans)."""
    kinds = set(map(type, values))
    return int in kinds and kinds <= _WITH_NULL


class Int8ListDumper(ListBinaryDumper):
    """A flat list of ints (NULLs allowed) as a one-dimensional ``bigint[]``."""

    oid = _INT8_ARRAY_OID

    def dump(self, obj: list[Any]) -> Buffer | None:
        count = len(obj)
        try:
            if None not in obj:
                head = _HEAD.pack(1, 0, _INT8_OID, count, 1)
                return head + _elements(count).pack(*chain.from_iterable(zip(repeat(8), obj)))
            parts = [_HEAD.pack(1, 1, _INT8_OID, count, 1)]
            parts.extend(_NULL if v is None else _ELEMENT.pack(8, v) for v in obj)
            return b"".join(parts)
        except struct.error:
            raise errors.DataError(
                "an integer list sent as bigint[] holds a value outside the 64-bit range"
            ) from None


class ListsDumper(ListBinaryDumper):
    """psycopg's binary list dumper, except that flat int lists take ``Int8ListDumper``."""

    def get_key(self, obj: list[Any], format: PyFormat) -> DumperKey:
        if not self.oid and obj and _ints(obj):
            return (self.cls, _Int8Key)
        return super().get_key(obj, format)

    def upgrade(self, obj: list[Any], format: PyFormat) -> BaseListDumper:
        if not self.oid and obj and _ints(obj):
            return Int8ListDumper(self.cls, self._tx)
        return super().upgrade(obj, format)
