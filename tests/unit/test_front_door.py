"""The typed front door (issue 28 item 5): a typo in an option of ``@app.job``, ``enqueue`` or
``request`` is refused naming the option and the allowed ones; durations take one form
everywhere (``Reschedule`` included); a cron shorthand is read as cron and its errors say what is
wrong; codes print by their names. No database: everything here is refused or built before one
is needed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from acta import (
    Acta,
    EventCode,
    InvalidPolicyError,
    JobStatus,
    Outcome,
    Reason,
    Reschedule,
    ValidationError,
)
from acta.policy.schedule import Schedule


@pytest.fixture
def app(tmp_path: Any) -> Acta:
    return Acta(tmp_path / "unused.sqlite3")  # nothing here connects


def _refused(call: Any, option: str) -> str:
    with pytest.raises(TypeError) as raised:
        call()
    message = str(raised.value)
    assert option in message
    assert isinstance(raised.value, ValidationError) and raised.value.field == option
    return message


def test_a_misspelt_job_option_names_it_and_the_allowed_ones(app: Acta) -> None:
    message = _refused(lambda: app.job("export", max_attemps=3), "max_attemps")
    assert "max_attempts" in message and "JobPolicy" not in message
    _refused(lambda: app.define("export", retries=3), "retries")


def test_a_misspelt_enqueue_option_names_it_and_the_allowed_ones(app: Acta) -> None:
    @app.job("export")
    def export(n: int) -> None: ...

    for call in (
        lambda: app.enqueue("export", 1, dely="5m"),
        lambda: export.enqueue(1, dely="5m"),
        lambda: export.request(1, dely="5m"),
        lambda: app.request("export", 1, dely="5m"),
    ):
        message = _refused(call, "dely")
        assert "delay" in message and "not_before" in message and "JobRequest" not in message


async def test_the_async_twins_refuse_a_misspelt_option_too(app: Acta) -> None:
    @app.job("export")
    async def export(n: int) -> None: ...

    with pytest.raises(TypeError, match="priorty"):
        await app.enqueue_async("export", 1, priorty=5)
    with pytest.raises(TypeError, match="priorty"):
        await export.enqueue_async(1, priorty=5)


@pytest.mark.parametrize("delay", ["10m", 600, 600.0, timedelta(minutes=10)])
def test_reschedule_takes_a_duration_in_every_form_a_duration_takes(delay: Any) -> None:
    assert Reschedule(delay=delay).delay == timedelta(minutes=10)


@pytest.mark.parametrize("delay", ["soon", "-5m", -1, True])
def test_reschedule_refuses_a_bad_delay_by_name(delay: Any) -> None:
    with pytest.raises(ValidationError) as raised:
        Reschedule(delay=delay)
    assert raised.value.field == "delay"


@pytest.mark.parametrize(
    ("shorthand", "cron"),
    [
        ("@hourly", "0 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
    ],
)
def test_cron_nicknames_are_cron(shorthand: str, cron: str) -> None:
    assert Schedule.parse(shorthand) == Schedule(cron=cron)
    assert Schedule(cron=shorthand) == Schedule(cron=cron)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0 3 * *", "4 fields"),
        ("0 3 * * * *", "6 fields"),
        ("@reboot", "@reboot"),
        ("@fortnightly", "@fortnightly"),
    ],
)
def test_a_cron_that_is_not_one_says_what_is_wrong(value: str, says: str) -> None:
    for make in (lambda: Schedule.parse(value), lambda: Schedule(cron=value)):
        with pytest.raises(InvalidPolicyError) as raised:
            make()
        assert raised.value.field in ("cron", "schedule")
        assert says in str(raised.value)
        assert "interval" not in raised.value.problem


def test_codes_print_by_name_and_keep_their_numbers() -> None:
    status = JobStatus.FAILED
    assert str(status) == f"{status}" == "failed"
    assert f"{status:>8}" == "  failed"
    assert repr(status) == "<JobStatus.FAILED: 101>"
    assert status == 101 and int(status) == 101 and f"{int(status)}" == "101"
    assert str(Reason.DEADLINE) == "deadline" and str(EventCode.EXECUTION_STARTED) == (
        "execution-started"
    )
    assert f"{Outcome.SUCCEEDED}" == "succeeded"
