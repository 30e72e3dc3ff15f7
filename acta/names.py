"""Rules for names and keys, identical on every database provider.

Job names, namespaces, schema names, deduplication and correlation keys, lane names and tags
are all checked here, in Python, before anything reaches SQL. Keeping one rule set means a
name valid on SQLite is valid on PostgreSQL too, and two keys that look the same are stored
the same. Validators return the value unchanged or raise; they must never silently rewrite it
(normalizing, trimming), because a key that changed on the way in would no longer match.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Final

from acta.errors import InvalidNameError, ValidationError

__all__ = [
    "validate_job_name",
    "validate_key",
    "validate_namespace",
    "validate_schema_name",
    "validate_tags",
]

_SEGMENT: Final = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
_JOB_NAME: Final = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT})*", re.ASCII)
_NAMESPACE: Final = re.compile(_SEGMENT, re.ASCII)
_SCHEMA: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}", re.ASCII)

_JOB_NAME_MAX: Final = 100
_NAMESPACE_MAX: Final = 63
SYSTEM_PREFIX: Final = "sys."  # names of acta's own jobs
_SYSTEM_PREFIX: Final = SYSTEM_PREFIX
_MAX_TAGS: Final = 32
_TAG_MAX: Final = 64

_JOB_NAME_RULE: Final = (
    "1-100 characters: lowercase kebab-case segments joined by '.', each segment starting "
    "with a letter, using only a-z, 0-9 and single '-' between letters or digits, "
    "e.g. 'send-email' or 'billing.charge-card'"
)
_NAMESPACE_RULE: Final = (
    "1-63 characters of lowercase kebab-case: starts with a letter, then a-z, 0-9 and "
    "single '-' between them, e.g. 'default' or 'eu-west'"
)
_SCHEMA_RULE: Final = (
    "1-63 characters from a-z, 0-9 and '_', not starting with a digit, and not 'pg_*' or "
    "'information_schema', which PostgreSQL reserves"
)

# Categories that make two keys look alike while comparing unequal, or that break logs:
# Cc are control characters, Cf invisible format characters (zero-width, bidi overrides),
# Cs lone surrogates, which cannot be encoded as UTF-8 at all.
_BAD_CATEGORIES: Final[dict[str, str]] = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Cs": "a lone surrogate",
}


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _require_str(value: object, field: str, rule: str) -> str:
    if not isinstance(value, str):
        raise InvalidNameError(field, f"expected a str, got {type(value).__name__}", rule)
    return value


def validate_job_name(name: str, *, allow_system: bool = False) -> str:
    """Return ``name`` if it is a valid job name, else raise :class:`InvalidNameError`.

    Names under ``sys.`` belong to acta's own jobs; only acta passes ``allow_system``.
    """
    field = "job name"
    _require_str(name, field, _JOB_NAME_RULE)
    if not name:
        raise InvalidNameError(field, "is empty", _JOB_NAME_RULE)
    if len(name) > _JOB_NAME_MAX:
        raise InvalidNameError(
            field, f"{_show(name)} has {len(name)} characters, over 100", _JOB_NAME_RULE
        )
    if not _JOB_NAME.fullmatch(name):
        raise InvalidNameError(field, f"{_show(name)} is not dotted kebab-case", _JOB_NAME_RULE)
    if name.startswith(_SYSTEM_PREFIX) and not allow_system:
        raise InvalidNameError(
            field,
            f"{_show(name)} is in the reserved 'sys.' space",
            "names starting with 'sys.' are kept for acta's own jobs; choose another prefix",
        )
    return name


def validate_namespace(name: str) -> str:
    """Return ``name`` if it is a valid namespace, else raise :class:`InvalidNameError`."""
    field = "namespace"
    _require_str(name, field, _NAMESPACE_RULE)
    if not name:
        raise InvalidNameError(field, "is empty", _NAMESPACE_RULE)
    if len(name) > _NAMESPACE_MAX:
        raise InvalidNameError(
            field, f"{_show(name)} has {len(name)} characters, over 63", _NAMESPACE_RULE
        )
    if not _NAMESPACE.fullmatch(name):
        raise InvalidNameError(field, f"{_show(name)} is not kebab-case", _NAMESPACE_RULE)
    return name


def validate_schema_name(name: str) -> str:
    """Return ``name`` if it can be the SQL schema for acta's tables, else raise.

    The rule is narrow enough that the name never needs quoting in SQL and reads the same
    whether or not a database folds case.
    """
    field = "schema"
    _require_str(name, field, _SCHEMA_RULE)
    if not _SCHEMA.fullmatch(name):
        raise InvalidNameError(
            field, f"{_show(name)} is not a plain lowercase identifier", _SCHEMA_RULE
        )
    if name.startswith("pg_") or name == "information_schema":
        raise InvalidNameError(field, f"{_show(name)} is reserved by PostgreSQL", _SCHEMA_RULE)
    return name


def _key_rule(max_length: int) -> str:
    return (
        f"a non-empty str of at most {max_length} characters, already in Unicode NFC form, "
        "with no control, invisible format or surrogate characters and no whitespace at "
        "either end"
    )


def validate_key(value: str, *, field: str, max_length: int = 200) -> str:
    """Return ``value`` if it is a valid free-text key, else raise :class:`InvalidNameError`.

    Used for deduplication keys, correlation keys, lane names and tags. The key is compared
    byte for byte in SQL, so it must arrive already normalized: rewriting it here would make
    the stored key differ from the one the caller holds.
    """
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ValidationError("max_length", f"{max_length!r} is not a length", "an int >= 1")
    rule = _key_rule(max_length)
    _require_str(value, field, rule)
    if not value:
        raise InvalidNameError(field, "is empty", rule)
    if len(value) > max_length:
        raise InvalidNameError(
            field, f"{_show(value)} has {len(value)} characters, over {max_length}", rule
        )
    for index, ch in enumerate(value):
        kind = _BAD_CATEGORIES.get(unicodedata.category(ch))
        if kind is not None:
            raise InvalidNameError(
                field,
                f"{_show(value)} has U+{ord(ch):04X}, {kind}, at index {index}",
                rule,
            )
    if value[0].isspace() or value[-1].isspace():
        raise InvalidNameError(
            field, f"{_show(value)} starts or ends with whitespace; strip it first", rule
        )
    if not unicodedata.is_normalized("NFC", value):
        raise InvalidNameError(
            field, f"{_show(value)} is not in NFC form; normalize to NFC first", rule
        )
    return value


def validate_tags(tags: Iterable[str], *, field: str = "tags") -> tuple[str, ...]:
    """Check each tag as a key of at most 64 characters; drop repeats, keep first-seen order.

    At most 32 distinct tags are allowed.
    """
    if type(tags) is tuple and not tags:  # the default, on nearly every request
        return ()
    if isinstance(tags, str | bytes):
        raise InvalidNameError(
            field,
            f"got a single {type(tags).__name__} {_show(tags)}",
            "pass a list or tuple of tags, e.g. ['billing'] rather than 'billing'",
        )
    try:
        items = list(tags)
    except TypeError:
        raise InvalidNameError(
            field, f"{type(tags).__name__} is not iterable", "pass a list or tuple of str"
        ) from None
    checked = [
        validate_key(tag, field=f"{field}[{index}]", max_length=_TAG_MAX)
        for index, tag in enumerate(items)
    ]
    seen = dict.fromkeys(checked)
    if len(seen) > _MAX_TAGS:
        raise InvalidNameError(
            field, f"has {len(seen)} distinct tags, over {_MAX_TAGS}", "at most 32 tags"
        )
    return tuple(seen)


# Allowed in free text although their categories are Cc/Cf: line breaks, tabs, and the
# zero-width joiner that emoji sequences need.
_TEXT_ALLOWED = frozenset("\n\r\t\u200d")


def validate_text(value: str, *, field: str, max_length: int) -> str:
    """Free text that people read later (an operator's reason, a note, an alert): refuse what
    would not store, or would hide or reorder text where it is shown (terminal escapes, bidi
    overrides, zero-width characters)."""
    rule = (
        f"1 to {max_length} characters of printable text (line breaks, tabs and emoji joiners "
        "allowed; no other control, invisible format or lone surrogate characters)"
    )
    if not isinstance(value, str) or not value.strip() or len(value) > max_length:
        raise ValidationError(field, f"got {value!r:.80}", rule)
    for index, ch in enumerate(value):
        if ch in _TEXT_ALLOWED or unicodedata.category(ch) not in _BAD_CATEGORIES:
            continue
        raise ValidationError(field, f"character U+{ord(ch):04X} at position {index}", rule)
    return value
