"""One enqueue, validated and encoded before any SQL runs.

A ``JobRequest`` is built from a definition, an input and per-enqueue options (delay or
not_before, priority, deduplication key, correlation key, tags). Building it checks every
option and encodes the payload under the size cap, so a bad request raises at the call site
and a batch with one bad member writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from acta.codec import check_size
from acta.duration import parse_duration
from acta.errors import ValidationError
from acta.job import validate_priority
from acta.names import validate_key, validate_tags
from acta.shape import to_data

if TYPE_CHECKING:
    from acta.job import JobDefinition

_MS = timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class JobRequest:
    """A validated, encoded request to enqueue one job."""

    definition: JobDefinition[Any, Any]
    payload: bytes
    priority: int
    run_at: datetime | None
    delay: timedelta
    dedup_key: str | None
    correlation_key: str | None
    tags: tuple[str, ...]

    @classmethod
    def build(
        cls,
        definition: JobDefinition[Any, Any],
        input: object = None,
        *,
        delay: str | float | timedelta | None = None,
        not_before: datetime | None = None,
        priority: int | None = None,
        dedup_key: str | None = None,
        correlation_key: str | None = None,
        tags: Iterable[str] = (),
    ) -> JobRequest:
        if delay is not None and not_before is not None:
            raise ValidationError(
                "delay", "both delay and not_before were given", "pass one of them"
            )
        run_at: datetime | None = None
        wait = timedelta(0)
        if delay is not None:
            # parse_duration caps durations at 365 days, which bounds delays too.
            wait = _ceil_ms(parse_duration(delay, field="delay", allow_zero=True))
        if not_before is not None:
            if not isinstance(not_before, datetime) or not_before.tzinfo is None:
                raise ValidationError(
                    "not_before", f"got {not_before!r}", "a timezone-aware datetime"
                )
            try:
                run_at = _ceil_instant(not_before)
            except OverflowError:
                raise ValidationError(
                    "not_before",
                    f"got {not_before!r}",
                    "a timezone-aware datetime before 9999-12-31",
                ) from None
        return cls(
            definition=definition,
            payload=encode_input(definition, input),
            priority=definition.policy.priority
            if priority is None
            else validate_priority(priority),
            run_at=run_at,
            delay=wait,
            dedup_key=None if dedup_key is None else validate_key(dedup_key, field="dedup_key"),
            correlation_key=(
                None
                if correlation_key is None
                else validate_key(correlation_key, field="correlation_key")
            ),
            tags=validate_tags(tags),
        )


def _ceil_ms(wait: timedelta) -> timedelta:
    """Round up to a whole millisecond, the ledger's precision: never due earlier than asked."""
    return -(-wait // _MS) * _MS


def _ceil_instant(when: datetime) -> datetime:
    return when + timedelta(microseconds=-when.microsecond % 1000)


def encode_input(definition: JobDefinition[Any, Any], value: object) -> bytes:
    """Convert and encode a handler input, refusing anything over the application's cap."""
    if not definition.takes_input and value is not None:
        raise ValidationError(
            "input", f"job {definition.name!r} takes no input", "pass nothing (None)"
        )
    data = to_data(value, definition.input_type, "input")
    encoded = definition.input_codec.encode(data)
    return check_size(encoded, definition.app.payload_cap, "input")
