"""Identifiers: time-ordered job UUIDs, their public text form, and worker incarnations.

A job's public handle is a :class:`JobRef`, a UUIDv7 written as ``job_`` plus 26 Crockford
base32 characters. Because the high bits of a UUIDv7 are its creation millisecond, refs sort
in creation order both as UUIDs and as text. This module must not read the clock: callers pass
the millisecond in, so tests and the runtime decide what "now" is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final
from uuid import UUID

from acta.errors import InvalidJobRefError, ValidationError

ROW_ID_MAX: Final = 2**63 - 1
"""The largest row id (job_id, alert_id, event_id): both dialects store ids as 64-bit integers,
so a larger one is refused by name before it reaches a driver."""

__all__ = ["JobRef", "new_incarnation", "uuid7"]

_MAX_MS: Final = (1 << 48) - 1
_RAND_BYTES: Final = 10

# Crockford's alphabet leaves out i, l, o and u so that refs survive being read aloud or
# copied by hand; the decoder maps the look-alikes back and refuses 'u' outright.
_ALPHABET: Final = "0123456789abcdefghjkmnpqrstvwxyz"
_DECODE: Final[dict[str, int]] = {
    **{ch: i for i, ch in enumerate(_ALPHABET)},
    **{ch.upper(): i for i, ch in enumerate(_ALPHABET)},
    **{ch: 0 for ch in "oO"},
    **{ch: 1 for ch in "iIlL"},
}
_PREFIX: Final = "job_"
_BODY_LEN: Final = 26
_REF_RULE: Final = (
    "a job ref is 'job_' followed by 26 Crockford base32 characters "
    "(0-9 and a-z except i, l, o, u; any case; o, i and l are read as 0, 1 and 1), "
    "and the first of the 26 must be 0-7"
)

_HOST_MAX: Final = 100


def uuid7(ms: int, rand: bytes | None = None) -> UUID:
    """Build an RFC 9562 version 7 UUID for the Unix millisecond ``ms``.

    Layout, high to low: 48 bits of ``ms``, the version nibble 7, 12 random bits, the variant
    bits ``10``, then 62 random bits. The 74 random bits come from the low end of ``rand``
    (10 bytes, for reproducible tests) or from ``os.urandom``.
    """
    if isinstance(ms, bool) or not isinstance(ms, int):
        raise ValidationError("ms", f"expected an int, got {type(ms).__name__}", "0 <= ms < 2**48")
    if not 0 <= ms <= _MAX_MS:
        raise ValidationError("ms", f"{ms} is out of range", "0 <= ms < 2**48")
    if rand is None:
        rand = os.urandom(_RAND_BYTES)
    elif not isinstance(rand, bytes) or len(rand) != _RAND_BYTES:
        raise ValidationError("rand", "expected exactly 10 bytes", "pass 10 bytes or None")
    bits = int.from_bytes(rand, "big")
    rand_a = (bits >> 62) & 0xFFF
    rand_b = bits & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return UUID(int=value)


# Two characters per 10 bits: 13 table lookups encode a ref (this runs for every enqueue).
_PAIRS: Final = tuple(a + b for a in _ALPHABET for b in _ALPHABET)


def _encode(value: int) -> str:
    pairs = _PAIRS
    return "".join([pairs[(value >> shift) & 0x3FF] for shift in range(120, -1, -10)])


@dataclass(frozen=True, slots=True, order=True)
class JobRef:
    """The public, printable handle of one job.

    Equality, hashing and ordering all follow the UUID, so refs made later sort later.
    Any UUID is accepted here; only :meth:`new` promises version 7.
    """

    uuid: UUID

    def __post_init__(self) -> None:
        if not isinstance(self.uuid, UUID):
            raise InvalidJobRefError(
                "job ref",
                f"expected a UUID, got {type(self.uuid).__name__}",
                "build refs with JobRef.new, JobRef.parse or JobRef.from_uuid",
            )

    @classmethod
    def new(cls, ms: int) -> JobRef:
        """A fresh ref for a job created at Unix millisecond ``ms``."""
        return cls(uuid7(ms))

    @classmethod
    def many(cls, ms: int, count: int) -> list[tuple[JobRef, str]]:
        """``count`` fresh refs for Unix millisecond ``ms``, each with its text form: one
        ``os.urandom`` call for the whole batch (a batch enqueue makes thousands)."""
        uuid7(ms, bytes(_RAND_BYTES))  # validates ms once for the batch
        pool = os.urandom(_RAND_BYTES * count)
        head = (ms << 80) | (0x7 << 76) | (0b10 << 62)
        low = (1 << 62) - 1
        out = []
        for k in range(0, _RAND_BYTES * count, _RAND_BYTES):
            bits = int.from_bytes(pool[k : k + _RAND_BYTES], "big")
            value = head | (((bits >> 62) & 0xFFF) << 64) | (bits & low)
            out.append((cls(UUID(int=value)), _PREFIX + _encode(value)))
        return out

    @classmethod
    def from_uuid(cls, value: UUID) -> JobRef:
        """Wrap a UUID read back from storage."""
        return cls(value)

    @classmethod
    def parse(cls, text: str) -> JobRef:
        """Read the canonical text form, forgiving case and Crockford look-alikes."""
        if not isinstance(text, str):
            raise InvalidJobRefError(
                "job ref", f"expected a str, got {type(text).__name__}", _REF_RULE
            )
        shown = repr(text) if len(text) <= 80 else repr(text[:77]) + "..."
        head = text[: len(_PREFIX)]
        # Lowercasing only ASCII keeps exotic characters (such as the Kelvin sign, whose
        # lowercase is 'k') from sneaking past the prefix check.
        if not head.isascii() or head.lower() != _PREFIX:
            raise InvalidJobRefError("job ref", f"{shown} does not start with 'job_'", _REF_RULE)
        body = text[len(_PREFIX) :]
        if len(body) != _BODY_LEN:
            raise InvalidJobRefError(
                "job ref",
                f"{shown} has {len(body)} characters after 'job_', not {_BODY_LEN}",
                _REF_RULE,
            )
        value = 0
        for index, ch in enumerate(body):
            digit = _DECODE.get(ch)
            if digit is None:
                raise InvalidJobRefError(
                    "job ref",
                    f"{shown} has {ch!r} at position {index + len(_PREFIX)}, "
                    "which is not a Crockford base32 character",
                    _REF_RULE,
                )
            value = (value << 5) | digit
        # 26 characters carry 130 bits; a UUID has 128, so the top two must be zero.
        if value >> 128:
            raise InvalidJobRefError(
                "job ref", f"{shown} starts with {body[0]!r}, which is above 7", _REF_RULE
            )
        return cls(UUID(int=value))

    @classmethod
    def coerce(cls, value: JobRef | str) -> JobRef:
        """Accept either a ref or its text; anything else is an error."""
        if isinstance(value, JobRef):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        raise InvalidJobRefError(
            "job ref",
            f"expected a JobRef or str, got {type(value).__name__}",
            _REF_RULE,
        )

    @property
    def created_at_ms(self) -> int:
        """The Unix millisecond stored in the top 48 bits."""
        return self.uuid.int >> 80

    def __str__(self) -> str:
        return _PREFIX + _encode(self.uuid.int)

    def __repr__(self) -> str:
        return f"JobRef({str(self)!r})"


def new_incarnation(host: str, pid: int) -> str:
    """A label for one run of one worker process, unique even if the pid is reused.

    The host is cut to 100 characters and anything outside printable ASCII becomes '?', so the
    label is safe to log and to store in any text column. 48 random bits tell apart two runs
    that share host and pid, for example after a container restart.
    """
    if not isinstance(host, str):
        raise ValidationError("host", f"expected a str, got {type(host).__name__}", "a host name")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 0:
        raise ValidationError("pid", f"{pid!r} is not a process id", "an int >= 0")
    safe = "".join(ch if " " <= ch <= "~" else "?" for ch in host[:_HOST_MAX])
    return f"{safe}:{pid}:{os.urandom(6).hex()}"
