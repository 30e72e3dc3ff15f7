"""Parsing and printing durations."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acta.duration import MAX_DURATION, format_duration, parse_duration
from acta.errors import ValidationError

S = timedelta(seconds=1)
MS = timedelta(milliseconds=1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500ms", 500 * MS),
        ("30s", 30 * S),
        ("1.5s", 1500 * MS),
        ("5m", timedelta(minutes=5)),
        ("8h", timedelta(hours=8)),
        ("2d", timedelta(days=2)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1m30s", 90 * S),
        ("1d2h3m4s5ms", timedelta(days=1, hours=2, minutes=3, seconds=4, milliseconds=5)),
        ("  45s\n", 45 * S),
        ("30", 30 * S),
        ("2.25", 2250 * MS),
        ("0.5ms", timedelta(microseconds=500)),
        ("365d", MAX_DURATION),
        ("0.1s", 100 * MS),
    ],
)
def test_parse_strings(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (30, 30 * S),
        (1.5, 1500 * MS),
        (0.001, MS),
        (timedelta(minutes=3), timedelta(minutes=3)),
        (365 * 86400, MAX_DURATION),
    ],
)
def test_parse_numbers_and_timedeltas(value: int | float | timedelta, expected: timedelta) -> None:
    assert parse_duration(value) == expected


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("-1s", "negative"),
        (-1, "negative"),
        (-0.5, "negative"),
        (timedelta(seconds=-1), "negative"),
        (float("nan"), "NaN"),
        (float("inf"), "finite"),
        (float("-inf"), "finite"),
        ("5x", "unknown unit 'x'"),
        ("5min", "unknown unit 'min'"),
        ("5S", "unknown unit 'S'"),
        ("5µs", "unknown unit"),
        ("1h30", "without a unit"),
        ("1m1h", "after a smaller unit"),
        ("1ms1s", "after a smaller unit"),
        ("1s1s", "repeats"),
        ("1h 30m", "cannot be read"),
        ("5 s", "without a unit"),
        ("nan", "cannot be read"),
        ("inf", "cannot be read"),
        ("1e3", "unknown unit 'e'"),
        (".5s", "cannot be read"),
        ("366d", "365 days"),
        (366 * 86400, "365 days"),
        (1e300, "365 days"),
        (timedelta(days=400), "365 days"),
        ("9" * 60 + "d", "365 days"),
        (0, "zero"),
        ("0s", "zero"),
        ("0", "zero"),
        (timedelta(0), "zero"),
        ("0.0000001s", "zero"),
        (True, "bool"),
        (None, "NoneType"),
        ([1], "list"),
    ],
)
def test_rejects(value: object, needle: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_duration(value, field="timeout")  # type: ignore[arg-type]
    assert info.value.field == "timeout"
    assert needle in info.value.problem
    assert "'1h30m'" in info.value.rule


def test_zero_allowed_when_asked() -> None:
    assert parse_duration(0, allow_zero=True) == timedelta(0)
    assert parse_duration("0s", allow_zero=True) == timedelta(0)
    assert parse_duration(timedelta(0), allow_zero=True) == timedelta(0)
    with pytest.raises(ValidationError) as info:
        parse_duration(-1, allow_zero=True)
    assert "must not be negative" in info.value.rule


def test_default_field_name() -> None:
    with pytest.raises(ValidationError) as info:
        parse_duration("nope")
    assert info.value.field == "duration"
    assert str(info.value).startswith("duration: 'nope'")


@pytest.mark.parametrize(
    ("td", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(hours=1, minutes=30), "1h30m"),
        (500 * MS, "500ms"),
        (45 * S, "45s"),
        (1500 * MS, "1s500ms"),
        (timedelta(days=2, seconds=1), "2d1s"),
        (timedelta(microseconds=1500), "1.5ms"),
        (timedelta(microseconds=1), "0.001ms"),
        (timedelta(minutes=1, microseconds=10), "1m0.01ms"),
        (-90 * S, "-1m30s"),
    ],
)
def test_format(td: timedelta, text: str) -> None:
    assert format_duration(td) == text


micros = st.integers(min_value=1, max_value=MAX_DURATION // timedelta(microseconds=1))


@given(st.integers(min_value=1, max_value=MAX_DURATION // MS))
def test_round_trip_whole_ms(ms: int) -> None:
    td = timedelta(milliseconds=ms)
    text = format_duration(td)
    assert parse_duration(text) == td
    assert "." not in text


@given(micros)
def test_round_trip_microseconds(us: int) -> None:
    td = timedelta(microseconds=us)
    assert parse_duration(format_duration(td)) == td


@given(micros)
def test_format_is_canonical(us: int) -> None:
    text = format_duration(timedelta(microseconds=us))
    assert format_duration(parse_duration(text)) == text


@given(st.floats(min_value=0.000001, max_value=365 * 86400))
def test_float_seconds(value: float) -> None:
    td = parse_duration(value)
    assert math.isclose(td.total_seconds(), value, abs_tol=1e-6)


@given(st.text(max_size=30))
def test_arbitrary_text_parses_or_raises_validation_error(text: str) -> None:
    try:
        td = parse_duration(text)
    except ValidationError:
        return
    assert timedelta(0) < td <= MAX_DURATION
