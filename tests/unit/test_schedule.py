"""Recurring schedules as values: parsing, DST rules, intervals, misfire, coalescing."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from acta.errors import ValidationError
from acta.policy.schedule import MAX_PREVIEW, Due, Schedule, coalesce

PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def _year(schedule: Schedule, tz: ZoneInfo, year: int) -> list[datetime]:
    start = datetime(year, 1, 1, tzinfo=tz) - timedelta(seconds=1)
    days = (date(year + 1, 1, 1) - date(year, 1, 1)).days
    return schedule.preview(start, days)


@pytest.mark.parametrize(
    ("zone", "tz", "gap_day", "fold_day", "fold_expr"),
    [
        ("Europe/Paris", PARIS, date(2026, 3, 29), date(2026, 10, 25), "30 2 * * *"),
        ("America/New_York", NEW_YORK, date(2026, 3, 8), date(2026, 11, 1), "30 1 * * *"),
    ],
)
def test_a_daily_cron_fires_once_a_day_for_a_year_across_both_dst_changes(
    zone: str, tz: ZoneInfo, gap_day: date, fold_day: date, fold_expr: str
) -> None:
    # 02:30 is skipped on the spring-forward day in both zones: it fires once, at 03:00.
    daily = _year(Schedule(cron="30 2 * * *", zone=zone), tz, 2026)
    local = [instant.astimezone(tz) for instant in daily]
    assert [d.date() for d in local] == [date(2026, 1, 1) + timedelta(days=i) for i in range(365)]
    for d in local:
        assert d.timetz().replace(tzinfo=None) == (time(3) if d.date() == gap_day else time(2, 30))
    assert all(instant.tzinfo is UTC for instant in daily)
    assert daily == sorted(set(daily))

    # The local time repeated by the fall-back fires once, on its first occurrence.
    repeated = _year(Schedule(cron=fold_expr, zone=zone), tz, 2026)
    on_fold = [i.astimezone(tz) for i in repeated if i.astimezone(tz).date() == fold_day]
    assert len(on_fold) == 1
    hour = int(fold_expr.split()[1])
    first = datetime.combine(fold_day, time(hour, 30), tzinfo=tz)  # fold=0
    assert on_fold[0] == first and on_fold[0].utcoffset() == first.utcoffset()
    assert len(repeated) == 365


def test_hourly_cron_on_the_change_days_fires_once_per_local_hour() -> None:
    hourly = Schedule(cron="0 * * * *", zone="Europe/Paris")
    spring = hourly.preview(datetime(2026, 3, 29, tzinfo=PARIS) - timedelta(seconds=1), 30)
    spring_hours = [i.astimezone(PARIS) for i in spring if i.astimezone(PARIS).day == 29]
    # 02:00 does not exist: it fires at 03:00, together with 03:00 itself.
    assert [d.hour for d in spring_hours] == [h for h in range(24) if h != 2]
    fall = hourly.preview(datetime(2026, 10, 25, tzinfo=PARIS) - timedelta(seconds=1), 30)
    fall_hours = [i.astimezone(PARIS) for i in fall if i.astimezone(PARIS).day == 25]
    assert [d.hour for d in fall_hours] == list(range(24))
    # The gap between the first 02:00 and 03:00 is two hours of real time on a 25-hour day.
    two, three = fall_hours[2], fall_hours[3]
    assert three.astimezone(UTC) - two.astimezone(UTC) == timedelta(hours=2)


def test_several_skipped_times_fire_once_at_the_end_of_the_gap() -> None:
    s = Schedule(cron="*/15 2 * * *", zone="America/New_York")
    fired = s.preview(datetime(2026, 3, 8, tzinfo=NEW_YORK), 2)
    assert fired[0] == datetime(2026, 3, 8, 3, 0, tzinfo=NEW_YORK)
    assert fired[1] == datetime(2026, 3, 9, 2, 0, tzinfo=NEW_YORK)


def test_next_after_is_strictly_after_even_in_the_second_pass_of_a_repeated_hour() -> None:
    s = Schedule(cron="*/20 * * * *", zone="America/New_York")
    second_pass = datetime(2026, 11, 1, 1, 10, tzinfo=NEW_YORK, fold=1)  # 01:10 EST
    assert second_pass.utcoffset() == timedelta(hours=-5)
    # 01:20 and 01:40 already fired in the first pass (EDT): the next firing is 02:00 EST.
    assert s.next_after(second_pass) == datetime(2026, 11, 1, 7, 0, tzinfo=UTC)


def test_cron_in_utc_and_the_result_is_always_utc() -> None:
    s = Schedule(cron="0 9 * * MON-FRI")
    assert s.zone == "UTC"
    friday = datetime(2026, 12, 4, 10, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert s.next_after(friday) == at(2026, 12, 4, 9)
    assert s.next_after(at(2026, 12, 4, 9)) == at(2026, 12, 7, 9)


def test_an_interval_fires_on_a_grid_anchored_at_the_epoch() -> None:
    s = Schedule(every="5m")
    assert s.every == timedelta(minutes=5) and s.cron is None
    assert s.next_after(at(2026, 1, 1, 0, 0, 1)) == at(2026, 1, 1, 0, 5)
    assert s.next_after(at(2026, 1, 1, 0, 5)) == at(2026, 1, 1, 0, 10)
    assert s.preview(at(2026, 1, 1), 3) == [at(2026, 1, 1, 0, m) for m in (5, 10, 15)]
    assert Schedule(every=1.5).preview(at(2026, 1, 1), 2)[1] == at(2026, 1, 1, 0, 0, 3)
    assert Schedule(every="1s").next_after(at(1969, 12, 31, 23, 59, 59)) == at(1970, 1, 1)


def test_values_compare_by_what_they_mean() -> None:
    assert Schedule(cron=" 30  2 * * * ") == Schedule(cron="30 2 * * *")
    assert Schedule(every="1m") == Schedule(every=60)
    assert Schedule(every="1m") != Schedule(every="1m", misfire="catch_up")
    assert "30 2 * * *" in repr(Schedule(cron="30 2 * * *"))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "* * *"}, "cron"),
        ({"cron": "0 * * * * *"}, "cron"),
        ({"cron": "0 0 30 2 *"}, "cron"),
        ({"cron": "every day"}, "cron"),
        ({"cron": "1- * * * *"}, "cron"),
        ({"cron": "0 0 * 2 MON#6"}, "cron"),
        ({"cron": 5}, "cron"),
        ({"cron": "30 2 * * *", "zone": "Mars/Olympus"}, "zone"),
        ({"cron": "30 2 * * *", "zone": "../etc/passwd"}, "zone"),
        ({"cron": "30 2 * * *", "zone": ""}, "zone"),
        ({"cron": "30 2 * * *", "zone": None}, "zone"),
        ({"every": "500ms"}, "every"),
        ({"every": 0.999}, "every"),
        ({"every": "1.0005s"}, "every"),
        ({"every": "5 minutes"}, "every"),
        ({"every": -5}, "every"),
        ({"every": True}, "every"),
        ({"every": "5m", "zone": "Europe/Paris"}, "zone"),
        ({"every": "5m", "misfire": "later"}, "misfire"),
        ({"cron": "* * * * *", "misfire": "catchup"}, "misfire"),
        ({"every": "5m", "cron": "* * * * *"}, "every"),
        ({}, "schedule"),
    ],
)
def test_bad_input_is_a_validation_error_naming_the_field(
    kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        Schedule(**kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert caught.value.rule
    if "zone" in kwargs and field == "zone" and kwargs["zone"]:
        assert str(kwargs["zone"]) in str(caught.value)


def test_a_cron_error_says_which_field_is_wrong() -> None:
    with pytest.raises(ValidationError, match="its minute field"):
        Schedule(cron="61 * * * *")
    with pytest.raises(ValidationError, match="its day-of-week field"):
        Schedule(cron="0 0 * * FUNDAY")


@pytest.mark.parametrize("n", [0, -1, 1001, 2.0, True, "3"])
def test_preview_takes_one_to_a_thousand(n: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Schedule(every="1s").preview(at(2026, 1, 1), n)  # type: ignore[arg-type]
    assert caught.value.field == "n"


def test_preview_at_the_bounds() -> None:
    s = Schedule(cron="* * * * *")
    assert len(s.preview(at(2026, 1, 1), 1)) == 1
    many = s.preview(at(2026, 1, 1), MAX_PREVIEW)
    assert len(many) == MAX_PREVIEW and many[-1] == at(2026, 1, 1) + timedelta(minutes=1000)


def test_upcoming_follows_the_misfire_policy() -> None:
    start, m = at(2026, 1, 1), timedelta(minutes=1)
    skip, catch_up = Schedule(every="1m"), Schedule(every="1m", misfire="catch_up")
    # On time: the calendar after the cursor.
    assert skip.upcoming(start, start, 2) == [start + m, start + 2 * m]
    # Thirty minutes late: skip fires the latest due instant, catch_up one for the backlog.
    late = start + 30 * m + timedelta(seconds=5)
    assert skip.upcoming(start, late, 2) == [start + 30 * m, start + 31 * m]
    assert catch_up.upcoming(start, late, 2) == [start + m, start + 31 * m]
    assert skip.upcoming(start, late, 1) == [start + 30 * m]
    with pytest.raises(ValidationError):
        skip.upcoming(start, late, 0)


def test_naive_instants_are_refused_by_name() -> None:
    s = Schedule(every="1m")
    naive = datetime(2026, 1, 1)  # noqa: DTZ001
    for call, field in [
        (lambda: s.next_after(naive), "instant"),
        (lambda: s.preview(naive, 1), "after"),
        (lambda: s.due(naive, at(2026, 1, 1)), "last_fired"),
        (lambda: s.due(at(2026, 1, 1), naive), "now"),
        (lambda: coalesce({"a": s}, {}, naive), "now"),
    ]:
        with pytest.raises(ValidationError) as caught:
            call()
        assert caught.value.field == field


def test_the_end_of_the_calendar_is_an_error_not_a_crash() -> None:
    with pytest.raises(ValidationError) as caught:
        Schedule(every="1d").next_after(datetime(9999, 12, 31, 12, tzinfo=UTC))
    assert caught.value.field == "instant"
    with pytest.raises(ValidationError):
        Schedule(cron="0 0 1 1 *").next_after(datetime(9999, 6, 1, tzinfo=UTC))


# --- due: misfire and the clock ---------------------------------------------------------


def test_nothing_is_due_before_the_next_instant() -> None:
    s = Schedule(every="5m")
    assert s.due(at(2026, 1, 1), at(2026, 1, 1, 0, 4, 59)) == Due(
        fire=(), next=at(2026, 1, 1, 0, 5), cursor=at(2026, 1, 1)
    )


def test_an_on_time_tick_fires_its_instant_under_either_policy() -> None:
    for misfire in ("skip", "catch_up"):
        s = Schedule(every="5m", misfire=misfire)
        due = s.due(at(2026, 1, 1), at(2026, 1, 1, 0, 5, 0, 30))
        assert due == Due(
            fire=(at(2026, 1, 1, 0, 5),),
            next=at(2026, 1, 1, 0, 10),
            cursor=at(2026, 1, 1, 0, 5),
            missed=0,
        )


def test_skip_fires_the_latest_missed_instant_and_drops_the_rest() -> None:
    s = Schedule(every="5m")
    due = s.due(at(2026, 1, 1), at(2026, 1, 1, 1, 2))
    # Due: 00:05 ... 01:00, twelve instants; the latest fires, eleven are dropped.
    assert due == Due(
        fire=(at(2026, 1, 1, 1, 0),),
        next=at(2026, 1, 1, 1, 5),
        cursor=at(2026, 1, 1, 1, 0),
        missed=11,
    )


def test_catch_up_fires_once_for_the_backlog_naming_the_oldest_instant() -> None:
    s = Schedule(cron="30 2 * * *", zone="Europe/Paris", misfire="catch_up")
    last = datetime(2026, 3, 27, 2, 30, tzinfo=PARIS)
    now = datetime(2026, 3, 30, 12, tzinfo=PARIS)
    due = s.due(last, now)
    assert due.fire == (datetime(2026, 3, 28, 2, 30, tzinfo=PARIS),)
    assert due.cursor == datetime(2026, 3, 30, 2, 30, tzinfo=PARIS)
    assert due.missed == 2  # the 29th (at 03:00) and the 30th, folded into the one firing
    assert due.next == datetime(2026, 3, 31, 2, 30, tzinfo=PARIS)
    # The next tick starts from the new cursor: nothing fires twice.
    assert s.due(due.cursor, now).fire == ()


def test_missed_is_counted_up_to_the_cap() -> None:
    due = Schedule(every="1s").due(at(2026, 1, 1), at(2026, 1, 2))
    assert due.fire == (at(2026, 1, 2),) and due.missed == 1000


def test_a_clock_stepped_back_fires_nothing_and_keeps_the_cursor() -> None:
    for misfire in ("skip", "catch_up"):
        s = Schedule(every="1m", misfire=misfire)
        fired = s.due(at(2026, 1, 1), at(2026, 1, 1, 0, 10))
        assert fired.cursor == at(2026, 1, 1, 0, 10)
        # The clock steps back five minutes: instants before the cursor are not fired again.
        back = s.due(fired.cursor, at(2026, 1, 1, 0, 5))
        assert back == Due(fire=(), next=at(2026, 1, 1, 0, 11), cursor=fired.cursor)
        # When time catches up, the firing after the cursor is the first to fire.
        again = s.due(back.cursor, at(2026, 1, 1, 0, 11))
        assert again.fire == (at(2026, 1, 1, 0, 11),)


def test_ticking_every_three_minutes_across_a_fall_back_fires_each_instant_once() -> None:
    s = Schedule(cron="*/7 * * * *", zone="America/New_York")
    start = datetime(2026, 10, 31, 12, tzinfo=NEW_YORK).astimezone(UTC)
    cursor, fired = start, []
    for tick in range(24 * 20):
        due = s.due(cursor, start + timedelta(minutes=3 * tick))
        fired.extend(due.fire)
        cursor = due.cursor
    last_tick = start + timedelta(minutes=3 * (24 * 20 - 1))
    assert fired == [i for i in s.preview(start, 1000) if i <= last_tick]
    # The first pass through 01:00-02:00 fires (EDT), the second (EST, 06:00-07:00 UTC) not.
    assert [i.minute for i in fired if at(2026, 11, 1, 5) <= i < at(2026, 11, 1, 6)] == [
        0,
        7,
        14,
        21,
        28,
        35,
        42,
        49,
        56,
    ]
    assert [i for i in fired if at(2026, 11, 1, 6) <= i < at(2026, 11, 1, 7)] == []


# --- coalescing ---------------------------------------------------------------------------


def test_coincident_schedules_fire_as_one_execution_naming_them() -> None:
    schedules = {
        "five": Schedule(every="5m"),
        "ten": Schedule(every="10m"),
        "hourly": Schedule(cron="0 * * * *"),
    }
    cursors = {name: at(2026, 1, 1) for name in schedules}
    ten_past = coalesce(schedules, cursors, at(2026, 1, 1, 0, 10))
    assert list(ten_past.fired) == ["five", "ten"]
    assert ten_past.fired["ten"].fire == (at(2026, 1, 1, 0, 10),)
    assert ten_past.cursors["hourly"] == at(2026, 1, 1)
    assert ten_past.next == at(2026, 1, 1, 0, 15)
    hour = coalesce(schedules, ten_past.cursors, at(2026, 1, 1, 1))
    assert sorted(hour.fired) == ["five", "hourly", "ten"]
    early = coalesce(schedules, hour.cursors, at(2026, 1, 1, 1, 0, 30))
    assert early.fired == {} and early.next == at(2026, 1, 1, 1, 5)


def test_coalesce_arms_new_schedules_at_now_and_drops_removed_ones() -> None:
    out = coalesce(
        {"new": Schedule(every="1m")},
        {"gone": at(2020, 1, 1)},
        at(2026, 1, 1, 0, 0, 30),
    )
    assert out.fired == {}
    assert out.cursors == {"new": at(2026, 1, 1, 0, 0, 30)}
    assert out.next == at(2026, 1, 1, 0, 1)


def test_coalesce_refuses_bad_input() -> None:
    with pytest.raises(ValidationError) as caught:
        coalesce({}, {}, at(2026, 1, 1))
    assert caught.value.field == "schedules"
    with pytest.raises(ValidationError) as caught:
        coalesce({"a": "*/5 * * * *"}, {}, at(2026, 1, 1))  # type: ignore[dict-item]
    assert caught.value.field == "schedules['a']"


# --- an independent oracle: scan real time minute by minute around the changes ---------


def _matches(expr: str, wall: datetime) -> bool:
    # cronsim only as a calendar matcher: does the naive wall time match the expression?
    return next(CronSim(expr, wall - timedelta(seconds=1))) == wall


def _oracle(expr: str, tz: ZoneInfo, start: datetime, minutes: int) -> list[datetime]:
    """The rules read literally, one UTC minute at a time: a minute fires if its local time
    matches and this is that local time's first occurrence, or if it ends a gap in which some
    skipped local minute matches."""
    fired = []
    for step in range(1, minutes + 1):
        u = start + timedelta(minutes=step)
        local = u.astimezone(tz)
        wall = local.replace(tzinfo=None)
        first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC) == u
        hit = first and _matches(expr, wall)
        before = (u - timedelta(minutes=1)).astimezone(tz).utcoffset()
        after = local.utcoffset()
        assert before is not None and after is not None
        if not hit and after > before:  # u is the end of a gap
            skipped = wall - (after - before)
            while skipped < wall and not hit:
                hit = _matches(expr, skipped)
                skipped += timedelta(minutes=1)
        if hit:
            fired.append(u)
    return fired


@pytest.mark.parametrize(
    ("zone", "day"),
    [
        ("Europe/Paris", datetime(2026, 3, 29)),  # noqa: DTZ001
        ("Europe/Paris", datetime(2026, 10, 25)),  # noqa: DTZ001
        ("America/New_York", datetime(2026, 3, 8)),  # noqa: DTZ001
        ("America/New_York", datetime(2026, 11, 1)),  # noqa: DTZ001
        ("Australia/Lord_Howe", datetime(2026, 4, 5)),  # noqa: DTZ001
        ("Australia/Lord_Howe", datetime(2026, 10, 4)),  # noqa: DTZ001
    ],
)
@pytest.mark.parametrize("expr", ["*/20 * * * *", "30 2 * * *", "0,45 1-3 * * *", "10 * * * *"])
def test_firings_around_a_change_agree_with_a_minute_by_minute_oracle(
    zone: str, day: datetime, expr: str
) -> None:
    tz = ZoneInfo(zone)
    start = day.replace(tzinfo=tz).astimezone(UTC) - timedelta(hours=6)
    window = 36 * 60
    expected = _oracle(expr, tz, start, window)
    schedule = Schedule(cron=expr, zone=zone)
    got = [i for i in schedule.preview(start, 200) if i <= start + timedelta(minutes=window)]
    assert got == expected
