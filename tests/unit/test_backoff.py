"""Backoff expressions and the delays they produce."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from acta.backoff import DEFAULT_BACKOFF, Backoff
from acta.duration import MAX_DURATION
from acta.errors import InvalidPolicyError, ValidationError

S = timedelta(seconds=1)
M = timedelta(minutes=1)
H = timedelta(hours=1)
US = timedelta(microseconds=1)
MAX_US = MAX_DURATION // US


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("1m..8h x2 ±10%", Backoff(M, 8 * H, 2.0, 0.1)),
        ("30s", Backoff(30 * S, 30 * S, 1.0, 0.0)),
        ("5s x2", Backoff(5 * S, 5 * S * 2**20, 2.0, 0.0)),
        ("1m..8h", Backoff(M, 8 * H, 2.0, 0.0)),
        ("10s ±20%", Backoff(10 * S, 10 * S, 1.0, 0.2)),
        ("1s..10m x1.5 +-5%", Backoff(S, 10 * M, 1.5, 0.05)),
        ("1m .. 8h  x 2  ± 10 %", Backoff(M, 8 * H, 2.0, 0.1)),
        ("1m..8hx2±10%", Backoff(M, 8 * H, 2.0, 0.1)),
        ("  1m..8h x2 +- 10%  ", Backoff(M, 8 * H, 2.0, 0.1)),
        ("5s x1", Backoff(5 * S, 5 * S, 1.0, 0.0)),
        ("5s..5s", Backoff(5 * S, 5 * S, 2.0, 0.0)),
        ("1m30s..1h x10 ±50%", Backoff(90 * S, H, 10.0, 0.5)),
        ("500ms..1m ±0%", Backoff(timedelta(milliseconds=500), M, 2.0, 0.0)),
        ("1..5", Backoff(S, 5 * S, 2.0, 0.0)),
        # Without a cap the ceiling is base * 2**20, but never past 365 days nor below base.
        ("1d x3", Backoff(timedelta(days=1), MAX_DURATION, 3.0, 0.0)),
        ("365d x2", Backoff(MAX_DURATION, MAX_DURATION, 2.0, 0.0)),
    ],
)
def test_parse(expr: str, expected: Backoff) -> None:
    assert Backoff.parse(expr) == expected


@pytest.mark.parametrize(
    ("expr", "needle"),
    [
        ("", "grammar"),
        ("x2", "grammar"),
        ("1m ±10", "grammar"),
        ("1m ±10% x2", "grammar"),
        ("1m..8h..9h", "more than one '..'"),
        ("0s", "zero"),
        ("0s..1m", "zero"),
        ("-1s", "negative"),
        ("1m..30s", "below base"),
        ("1m x11", "factor"),
        ("1m x0.5", "factor"),
        ("1m x", "factor"),
        ("1m x-2", "factor"),
        ("1m x1e1", "factor"),
        ("1m..8h x10.000000000000000000001", "factor"),
        ("1m ±60%", "jitter"),
        ("1m ±50.0000000000000000000000001%", "jitter"),
        ("1m ±-5%", "jitter"),
        ("1m ±%", "jitter"),
        ("fast", "base"),
        ("1m..", "cap"),
        ("..1m", "base"),
        ("1m..400d", "365 days"),
        ("1m,8h", "base"),
        ("1m x2 ±10% extra", "grammar"),
    ],
)
def test_parse_rejects(expr: str, needle: str) -> None:
    with pytest.raises(InvalidPolicyError) as info:
        Backoff.parse(expr)
    err = info.value
    assert err.field == "backoff"
    assert needle in err.problem
    assert err.problem.startswith(repr(expr))
    assert "<base>[..<cap>] [x<factor>] [±<pct>%]" in err.rule


def test_parse_rejects_non_str() -> None:
    with pytest.raises(InvalidPolicyError):
        Backoff.parse(30)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        (timedelta(0), S, 2.0, 0.0),
        (-S, S, 2.0, 0.0),
        (M, S, 2.0, 0.0),
        (S, MAX_DURATION + S, 2.0, 0.0),
        (S, M, 0.9, 0.0),
        (S, M, 10.5, 0.0),
        (S, M, float("nan"), 0.0),
        (S, M, True, 0.0),
        (S, M, 2.0, 0.6),
        (S, M, 2.0, -0.1),
        (S, M, 2.0, float("inf")),
        (1, M, 2.0, 0.0),
    ],
)
def test_constructor_validates(fields: tuple[object, object, object, object]) -> None:
    with pytest.raises(InvalidPolicyError):
        Backoff(*fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("1m..8h x2 ±10%", "1m..8h x2 ±10%"),
        ("30s", "30s"),
        ("1m .. 8h", "1m..8h x2"),
        ("10s +-20%", "10s ±20%"),
        ("1s..10m x1.50 ±5.0%", "1s..10m x1.5 ±5%"),
        ("5s x2", "5s..60d16h21m20s x2"),
        ("90s..2h x3 ±12.5%", "1m30s..2h x3 ±12.5%"),
    ],
)
def test_str(expr: str, text: str) -> None:
    assert str(Backoff.parse(expr)) == text


backoffs = st.builds(
    lambda base, extra, factor, jitter: Backoff(
        timedelta(microseconds=base),
        timedelta(microseconds=min(MAX_US, base + extra)),
        factor,
        jitter,
    ),
    st.integers(min_value=1, max_value=MAX_US),
    st.one_of(st.just(0), st.integers(min_value=0, max_value=MAX_US)),
    st.one_of(st.just(1.0), st.just(2.0), st.floats(min_value=1.0, max_value=10.0)),
    st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=0.5)),
)


@given(backoffs)
def test_str_round_trips(policy: Backoff) -> None:
    assert Backoff.parse(str(policy)) == policy


def test_default() -> None:
    assert Backoff(5 * S, H, 2.0, 0.1) == DEFAULT_BACKOFF


def test_delays_without_jitter() -> None:
    policy = Backoff.parse("1s..1m x2")
    rng = random.Random(0)
    delays = [policy.delay(n, rng) for n in range(1, 9)]
    assert delays == [S, 2 * S, 4 * S, 8 * S, 16 * S, 32 * S, M, M]


def test_fixed_delay() -> None:
    policy = Backoff.parse("30s")
    rng = random.Random(0)
    assert {policy.delay(n, rng) for n in (1, 2, 50, 10**6)} == {30 * S}


def test_fractional_factor() -> None:
    policy = Backoff.parse("1s..1h x1.5")
    assert policy.delay(3, random.Random(0)) == timedelta(seconds=2.25)


@pytest.mark.parametrize("failures", [1_000, 10**9, 10**30, 10**400])
def test_huge_failure_counts_hit_the_cap(failures: int) -> None:
    rng = random.Random(0)
    assert Backoff.parse("1ms..365d x1.0000001").delay(failures, rng) <= MAX_DURATION
    assert Backoff.parse("5s..1h x2").delay(failures, rng) == H
    assert Backoff.parse("5s x10").delay(failures, rng) == 5 * S * 2**20


def test_jitter_stays_in_band_and_can_pass_cap() -> None:
    policy = Backoff.parse("10s ±20%")
    rng = random.Random(1234)
    delays = [policy.delay(1, rng) for _ in range(2000)]
    assert all(8 * S <= d <= 12 * S for d in delays)
    # The spread covers the band, including above the cap, which the docs allow.
    assert min(delays) < 8.5 * S
    assert max(delays) > 11.5 * S


def test_delay_is_deterministic_for_a_seed() -> None:
    policy = DEFAULT_BACKOFF
    first = [policy.delay(n, random.Random(7)) for n in range(1, 20)]
    second = [policy.delay(n, random.Random(7)) for n in range(1, 20)]
    assert first == second


@pytest.mark.parametrize("failures", [0, -1, True, 1.0, "1"])
def test_delay_rejects_bad_failures(failures: object) -> None:
    with pytest.raises(ValidationError) as info:
        DEFAULT_BACKOFF.delay(failures, random.Random(0))  # type: ignore[arg-type]
    assert info.value.field == "failures"


@given(backoffs, st.integers(min_value=1, max_value=200), st.integers(min_value=0))
def test_delay_bounds(policy: Backoff, failures: int, seed: int) -> None:
    delay = policy.delay(failures, random.Random(seed))
    low = policy.base * (1 - policy.jitter) - US
    high = policy.cap * (1 + policy.jitter) + US
    assert low <= delay <= high


@given(backoffs, st.integers(min_value=1, max_value=100))
def test_nominal_delay_grows_then_holds(policy: Backoff, failures: int) -> None:
    assume(policy.jitter == 0.0)
    rng = random.Random(0)
    now = policy.delay(failures, rng)
    later = policy.delay(failures + 1, rng)
    assert policy.base <= now <= later <= policy.cap
