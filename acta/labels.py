"""Tags and metadata that operators put on tenants and namespaces: checked before any write.

Tags are keys of at most 64 characters (``validate_tags``), stored as a sorted JSON array.
Metadata is a JSON object of at most 16 KiB, for ownership and routing notes (a team, a
channel, a cost centre); acta stores it and never acts on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from acta.errors import ValidationError
from acta.names import validate_tags

METADATA_MAX: Final = 16 * 1024
"""The largest metadata object, as JSON, in bytes."""
METADATA_RULE: Final = "a JSON object (a dict with str keys) of at most 16 KiB"


def tags_json(tags: Iterable[str], field: str = "tags") -> str:
    """Checked tags as the sorted JSON array the ledger stores."""
    return json.dumps(sorted(validate_tags(tags, field=field)))


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """A metadata object as compact JSON, or a ValidationError naming the rule."""
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise ValidationError("metadata", f"got {type(metadata).__name__}", METADATA_RULE)
    try:
        text = json.dumps(dict(metadata), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError("metadata", f"is not JSON: {exc}", METADATA_RULE) from None
    if len(text.encode()) > METADATA_MAX:
        raise ValidationError("metadata", f"{len(text.encode())} bytes as JSON", METADATA_RULE)
    return text


def check_version(value: object) -> int:
    """An expected version: the one the caller read (1 or more)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(
            "expected_version", f"got {value!r:.80}", "the version you read (>= 1)"
        )
    return value
