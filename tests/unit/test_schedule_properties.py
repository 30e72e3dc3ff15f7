"""Properties of schedules, over many expressions, zones and instants (hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from acta.errors import ValidationError
from acta.policy.schedule import Schedule

EXPRESSIONS = [
    "30 2 * * *",
    "30 1 * * *",
    "0 * * * *",
    "*/15 * * * *",
    "*/20 1-3 * * *",
    "0,30 2 * * SUN",
    "59 23 L * *",
    "0 3 * 3,10,11 SUN#1",
    "15 2 * * 0",
    "* 2 * * *",
]
ZONES = [
    "UTC",
    "Europe/Paris",
    "America/New_York",
    "Australia/Lord_Howe",  # half-hour DST changes
    "Pacific/Apia",  # skipped a whole day in 2011
    "America/Santiago",  # changes at midnight
]

instants = st.datetimes(
    min_value=datetime(2005, 1, 1),  # noqa: DTZ001 - the strategy wants naive bounds
    max_value=datetime(2035, 1, 1),  # noqa: DTZ001
    timezones=st.just(UTC),
)
# Around DST changes (roughly; the window is wide), where the mapping has gaps and folds.
CHANGES = [
    datetime(2026, 3, 29, 1, tzinfo=UTC),  # Paris, spring
    datetime(2026, 10, 25, 1, tzinfo=UTC),  # Paris, fall
    datetime(2026, 3, 8, 7, tzinfo=UTC),  # New York, spring
    datetime(2026, 11, 1, 6, tzinfo=UTC),  # New York, fall
    datetime(2026, 4, 4, 15, tzinfo=UTC),  # Lord Howe, half an hour back
    datetime(2011, 12, 30, 10, tzinfo=UTC),  # Apia skips the 30th
    datetime(2026, 4, 5, 3, tzinfo=UTC),  # Santiago
]
near_changes = st.builds(
    lambda change, seconds: change + timedelta(seconds=seconds),
    st.sampled_from(CHANGES),
    st.integers(min_value=-6 * 3600, max_value=6 * 3600),
)
instants = st.one_of(instants, near_changes)
cron_schedules = st.builds(
    lambda expr, zone, misfire: Schedule(cron=expr, zone=zone, misfire=misfire),
    st.sampled_from(EXPRESSIONS),
    st.sampled_from(ZONES),
    st.sampled_from(["skip", "catch_up"]),
)
interval_schedules = st.builds(
    lambda ms, misfire: Schedule(every=timedelta(milliseconds=ms), misfire=misfire),
    st.integers(min_value=1000, max_value=3 * 86_400_000),
    st.sampled_from(["skip", "catch_up"]),
)
schedules = st.one_of(cron_schedules, interval_schedules)


@settings(max_examples=300, deadline=None)
@given(schedules, instants)
def test_preview_is_strictly_increasing_utc_and_starts_after_its_instant(
    schedule: Schedule, instant: datetime
) -> None:
    shown = schedule.preview(instant, 25)
    assert len(shown) == 25
    assert shown[0] == schedule.next_after(instant) > instant
    assert all(a < b for a, b in pairwise(shown))
    assert all(i.tzinfo is UTC for i in shown)
    # Each is the next firing after the one before it.
    assert [schedule.next_after(i) for i in shown[:-1]] == shown[1:]


@settings(max_examples=300, deadline=None)
@given(schedules, instants)
def test_no_firing_lies_between_an_instant_and_the_next_one(
    schedule: Schedule, instant: datetime
) -> None:
    following = schedule.next_after(instant)
    # Searching backwards agrees with searching forwards: the latest firing at or before
    # the next one is that one, and just before it the latest is at or before the instant.
    assert schedule._at_or_before(following) == following
    before = schedule._at_or_before(following - timedelta(microseconds=1))
    assert before is None or before <= instant


@settings(max_examples=300, deadline=None)
@given(
    schedules,
    instants,
    st.integers(min_value=-86_400, max_value=10 * 86_400) | st.integers(-7200, 7200),
)
def test_due_fires_at_most_once_and_never_at_or_before_the_cursor(
    schedule: Schedule, last: datetime, seconds: int
) -> None:
    now = last + timedelta(seconds=seconds)
    due = schedule.due(last, now)
    assert len(due.fire) <= 1
    assert due.cursor >= last
    assert due.next == schedule.next_after(due.cursor)
    assert due.next > now
    for fired in due.fire:
        assert last < fired <= now
        assert due.cursor == schedule._at_or_before(now)
    if not due.fire:
        assert due.cursor == last and due.missed == 0
    # Asking again at the same moment, from the new cursor, fires nothing more.
    assert schedule.due(due.cursor, now).fire == ()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["*", "*/5", "1-5", "L", "LW", "5L", "MON#2", ",", "-", "/", "#"]),
            st.text(max_size=6),
        ),
        min_size=0,
        max_size=7,
    )
)
def test_any_text_is_a_schedule_or_a_validation_error_naming_cron(parts: list[str]) -> None:
    text = " ".join(parts)
    try:
        Schedule(cron=text)
    except ValidationError as exc:
        assert exc.field == "cron"
