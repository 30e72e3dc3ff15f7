"""Retry backoff: how long a job waits after each failed attempt.

A policy is written as one short expression, ``<base>[..<cap>] [x<factor>] [±<pct>%]``, for
example ``"1m..8h x2 ±10%"``. This module parses and prints that expression and computes the
delay for a given number of failures. It only computes: the caller supplies the random source
and adds the delay to its own notion of now; nothing here may read the clock or sleep.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Final, TypeGuard

from acta.duration import MAX_DURATION, format_duration, parse_duration
from acta.errors import InvalidPolicyError, ValidationError

__all__ = ["DEFAULT_BACKOFF", "Backoff"]

_FIELD: Final = "backoff"
_GRAMMAR: Final = (
    "write <base>[..<cap>] [x<factor>] [±<pct>%], e.g. '1m..8h x2 ±10%', '30s' or '5s x2'; "
    "'+-' may stand for '±'; durations use d, h, m, s, ms; base > 0, cap >= base, "
    "1 <= factor <= 10, 0 <= pct <= 50"
)
_MAX_FACTOR: Final = 10.0
_MAX_JITTER: Final = 0.5
# With a factor but no cap, growth stops after this many doublings' worth of base.
_UNCAPPED_STEPS: Final = 20
_DEFAULT_RANGE_FACTOR: Final = Decimal(2)

# Durations never contain 'x', '±' or whitespace, so once the spaces around '..' are gone the
# span ends at the first of those. The pieces are loose on purpose: each is checked again
# below so that the message can say which piece is wrong.
_AROUND_RANGE: Final = re.compile(r"\s*\.\.\s*")
_SHAPE: Final = re.compile(
    r"(?P<span>[^x±\s]+)\s*"
    r"(?:x\s*(?P<factor>[^\s±]*)\s*)?"
    r"(?:±\s*(?P<jitter>[^\s%]*)\s*%)?",
)
_NUMBER: Final = re.compile(r"[0-9]+(?:\.[0-9]+)?", re.ASCII)
_US: Final = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with a ceiling and symmetric random jitter.

    ``jitter`` is a fraction between 0 and 0.5: 0.1 spreads each delay uniformly over
    ±10% of its nominal value. Jitter is applied after the cap, so a delay may land up to
    ``cap * (1 + jitter)``; that keeps retries of many jobs spread out even once all of them
    have reached the cap.
    """

    base: timedelta
    cap: timedelta
    factor: float
    jitter: float

    def __post_init__(self) -> None:
        problem = _problem(self.base, self.cap, self.factor, self.jitter)
        if problem:
            raise InvalidPolicyError(_FIELD, f"{self!r}: {problem}", _GRAMMAR)

    @classmethod
    def parse(cls, expr: str) -> Backoff:
        """Read a backoff expression; see the module docstring for the grammar.

        Defaults: a lone base is a fixed delay (cap = base, factor 1); a range without a
        factor doubles; a factor without a range is capped at ``base * 2**20`` (at most
        365 days); jitter is 0 unless given.
        """
        if not isinstance(expr, str):
            raise InvalidPolicyError(_FIELD, f"expected a str, got {type(expr).__name__}", _GRAMMAR)
        shown = repr(expr) if len(expr) <= 80 else repr(expr[:77]) + "..."
        text = _AROUND_RANGE.sub("..", expr.strip().replace("+-", "±"))
        shape = _SHAPE.fullmatch(text)
        if shape is None:
            raise InvalidPolicyError(_FIELD, f"{shown} does not fit the grammar", _GRAMMAR)

        span = shape["span"].split("..")
        if len(span) > 2:
            raise InvalidPolicyError(_FIELD, f"{shown} has more than one '..'", _GRAMMAR)
        base = _duration(span[0], "base", shown)
        cap = _duration(span[1], "cap", shown) if len(span) == 2 else None

        factor_text = shape["factor"]
        factor = None if factor_text is None else _number(factor_text, "factor", shown)
        jitter_text = shape["jitter"]
        pct = Decimal(0) if jitter_text is None else _number(jitter_text, "jitter", shown)
        # Range checks on the decimals as written, so '50.0000001%' is not rounded into range.
        if factor is not None and not 1 <= factor <= _MAX_FACTOR:
            raise InvalidPolicyError(_FIELD, f"{shown}: factor must be 1 to 10", _GRAMMAR)
        if pct > 50:
            raise InvalidPolicyError(_FIELD, f"{shown}: jitter must be 0% to 50%", _GRAMMAR)

        if cap is None:
            if factor is None or factor == 1:
                cap, factor = base, Decimal(1)
            else:
                # A factor with no cap still needs a ceiling; never below base, so a base
                # near the 365-day limit stays valid.
                cap = max(base, min(base * 2**_UNCAPPED_STEPS, MAX_DURATION))
        elif factor is None:
            factor = _DEFAULT_RANGE_FACTOR
        problem = _problem(base, cap, float(factor), 0.0)
        if problem:
            raise InvalidPolicyError(_FIELD, f"{shown}: {problem}", _GRAMMAR)
        # Dividing the decimal text (not a float) keeps str(parse(s)) stable: the percentage
        # printed back is exactly the one that was read.
        return cls(base=base, cap=cap, factor=float(factor), jitter=float(pct / 100))

    def delay(self, failures: int, rng: random.Random) -> timedelta:
        """The wait before the next attempt, after ``failures`` failed attempts (>= 1).

        The nominal delay is ``min(cap, base * factor ** (failures - 1))``; jitter then picks
        uniformly within ±jitter of it, so the result may exceed ``cap`` by that fraction.
        """
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise ValidationError("failures", f"{failures!r} is not a failure count", "an int >= 1")
        base_us = self.base // _US
        cap_us = self.cap // _US
        nominal = float(cap_us)
        if self.factor == 1.0:
            nominal = float(base_us)
        else:
            # Compare exponents first: factor ** (failures - 1) overflows a float long
            # before failure counts stop being plausible, and the cap is reached far sooner.
            # Clamping keeps the product a finite float; at factor 1 + 2**-52 the clamp is
            # still thousands of times past the largest cap/base ratio.
            steps = min(failures - 1, 2**64)
            if steps * math.log(self.factor) < math.log(cap_us / base_us):
                nominal = min(base_us * self.factor**steps, float(cap_us))
        if self.jitter:
            nominal = rng.uniform(nominal * (1 - self.jitter), nominal * (1 + self.jitter))
        return timedelta(microseconds=round(nominal))

    def __str__(self) -> str:
        parts = [format_duration(self.base)]
        if self.cap != self.base or self.factor != 1.0:
            parts[0] += ".." + format_duration(self.cap)
            parts.append("x" + _plain(Decimal(repr(float(self.factor)))))
        if self.jitter:
            parts.append("±" + _plain(Decimal(repr(float(self.jitter))) * 100) + "%")
        return " ".join(parts)


def _problem(base: object, cap: object, factor: object, jitter: object) -> str:
    """What is wrong with these fields, or '' when they form a valid policy."""
    if not isinstance(base, timedelta) or not isinstance(cap, timedelta):
        return "base and cap must be timedelta values"
    if base <= timedelta(0):
        return "base must be positive"
    if cap < base:
        return f"cap {format_duration(cap)} is below base {format_duration(base)}"
    if cap > MAX_DURATION:
        return "cap is over 365 days"
    if not _is_real(factor) or not 1.0 <= factor <= _MAX_FACTOR:
        return f"factor {factor!r} is not between 1 and 10"
    if not _is_real(jitter) or not 0.0 <= jitter <= _MAX_JITTER:
        return f"jitter {jitter!r} is not a fraction between 0 and 0.5"
    return ""


def _is_real(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _duration(text: str, part: str, shown: str) -> timedelta:
    try:
        return parse_duration(text, field=f"{_FIELD} {part}")
    except ValidationError as err:
        raise InvalidPolicyError(_FIELD, f"{shown}: the {part} {err.problem}", _GRAMMAR) from None


def _number(text: str, part: str, shown: str) -> Decimal:
    if not _NUMBER.fullmatch(text):
        raise InvalidPolicyError(
            _FIELD, f"{shown}: the {part} {text!r} is not a plain decimal number", _GRAMMAR
        )
    return Decimal(text)


def _plain(value: Decimal) -> str:
    """A decimal without exponent or trailing zeros: 2.0 -> '2', 1.50 -> '1.5'."""
    return format(value.normalize(), "f")


DEFAULT_BACKOFF: Final = Backoff.parse("5s..1h x2 ±10%")
