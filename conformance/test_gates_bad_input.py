"""Bad gate input is refused with a typed error naming the field and the rule, before anything
is written (issue 9, "Bad input"): lane and concurrency key names, rates, concurrency limits,
meters shared at two rates, and the operator verbs' arguments. Every refusal is checked
against a snapshot of the ledger's row counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, InvalidNameError, InvalidPolicyError, ValidationError
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import Ledger

BAD_NAMES = {
    "empty": "",
    "too long": "x" * 201,
    "control character": "cust\x00-1",
    "newline": "cust\n-1",
    "leading whitespace": " cust-1",
}
BAD_RATES: list[Any] = ["10 per sec", "0/s", "-1/s", "10/x", 10, "", "1.5/s", "2000/s"]
BAD_LIMITS: list[Any] = [0, -1, True, 1.5, "2", 100_001]


@pytest.mark.parametrize("field", ["lane", "concurrency_key"])
@pytest.mark.parametrize("bad", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_a_bad_lane_or_key_is_refused_and_nothing_is_written(
    acta_app: Acta, acta_host: Host, ledger: Ledger, field: str, bad: str
) -> None:
    @acta_app.job("step")
    def step(n: int) -> None:
        pass

    step.enqueue(0, lane="warm", concurrency_key="warm")  # the ledger is in use already
    before = ledger.snapshot()
    calls: list[Callable[[], object]] = [
        lambda: step.enqueue(1, **{field: bad}),
        lambda: acta_app.enqueue("step", 1, **{field: bad}),
        lambda: acta_app.enqueue_batch(
            [acta_app.request(step, 2), acta_app.request(step, 3, **{field: bad})]
        ),
    ]
    for call in calls:
        with pytest.raises(InvalidNameError) as caught:
            call()
        assert caught.value.field == field
        assert str(caught.value).startswith(f"{field}: ")
    assert ledger.snapshot() == before


def test_a_name_of_exactly_200_characters_is_accepted(acta_app: Acta, acta_host: Host) -> None:
    @acta_app.job("step")
    def step(n: int) -> None:
        pass

    longest = "k" * 200
    step.enqueue(1, lane=longest, concurrency_key=longest)
    acta_host.run_until_idle()
    assert [g.name for g in acta_app.gates()] == [longest]


@pytest.mark.parametrize("bad", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_a_bad_lane_or_rate_key_on_a_definition_is_refused(acta_app: Acta, bad: str) -> None:
    # On a definition the same name rules hold, reported as a policy error like every other
    # policy argument of @app.job.
    with pytest.raises(InvalidPolicyError) as caught:
        acta_app.define("laned", lane=bad)
    assert caught.value.field == "lane"
    with pytest.raises(InvalidPolicyError) as caught:
        acta_app.define("metered", rate_limit="1/s", rate_key=bad)
    assert caught.value.field == "rate_key"
    assert "laned" not in acta_app.definitions and "metered" not in acta_app.definitions


@pytest.mark.parametrize("bad", BAD_RATES, ids=repr)
def test_a_malformed_rate_is_refused(acta_app: Acta, bad: Any) -> None:
    with pytest.raises(InvalidPolicyError) as caught:
        acta_app.define("send-sms", rate_limit=bad)
    assert caught.value.field == "rate_limit"
    assert "'N/s', 'N/m' or 'N/h'" in str(caught.value)
    assert "send-sms" not in acta_app.definitions


@pytest.mark.parametrize("good", ["1/s", "1000/s", "600/m", "5/h", " 10 / s "])
def test_well_formed_rates_are_accepted(acta_app: Acta, good: str) -> None:
    acta_app.define("send-sms", rate_limit=good)
    assert "send-sms" in acta_app.definitions


@pytest.mark.parametrize("bad", BAD_LIMITS, ids=repr)
def test_a_concurrency_limit_below_one_or_not_an_int_is_refused(acta_app: Acta, bad: Any) -> None:
    with pytest.raises(InvalidPolicyError) as caught:
        acta_app.define("crunch", concurrency_limit=bad)
    assert caught.value.field == "concurrency_limit"
    assert "crunch" not in acta_app.definitions


def test_a_rate_key_needs_a_rate_limit(acta_app: Acta) -> None:
    with pytest.raises(InvalidPolicyError) as caught:
        acta_app.define("send-sms", rate_key="carrier")
    assert caught.value.field == "rate_key"
    assert "rate_limit" in str(caught.value)


def test_definitions_sharing_a_meter_at_two_rates_are_refused_at_registration(
    acta_app: Acta,
) -> None:
    acta_app.define("send-sms", rate_limit="10/s", rate_key="carrier")
    with pytest.raises(InvalidPolicyError) as caught:
        acta_app.define("send-mms", rate_limit="5/s", rate_key="carrier")
    assert caught.value.field == "rate_limit"
    assert "'carrier'" in str(caught.value) and "send-sms" in str(caught.value)
    assert "send-mms" not in acta_app.definitions

    # A rate_key may name another definition's own meter: the same rule holds.
    acta_app.define("mailer", rate_limit="2/s")
    with pytest.raises(InvalidPolicyError):
        acta_app.define("newsletter", rate_limit="3/s", rate_key="mailer")
    acta_app.define("digest", rate_limit="2/s", rate_key="mailer")  # same rate: one meter
    assert {"send-sms", "mailer", "digest"} <= set(acta_app.definitions)


OVERRIDE_CALLS: dict[str, tuple[type[Exception], str, dict[str, Any]]] = {
    "both key and job": (ValidationError, "key", {"key": "acme", "job": "crunch", "limit": 2}),
    "neither key nor job": (ValidationError, "key", {"limit": 2}),
    "limit zero": (InvalidPolicyError, "limit", {"key": "acme", "limit": 0}),
    "limit a float": (InvalidPolicyError, "limit", {"job": "crunch", "limit": 2.0}),
    "negative version": (ValidationError, "expected_version", {"key": "acme", "limit": 2}),
    "bad key": (InvalidNameError, "key", {"key": " acme", "limit": 2}),
}


@pytest.mark.parametrize("case", list(OVERRIDE_CALLS))
def test_bad_concurrency_overrides_are_refused_and_nothing_is_written(
    acta_app: Acta, acta_host: Host, ledger: Ledger, case: str
) -> None:
    error, field, args = OVERRIDE_CALLS[case]
    version = -1 if case == "negative version" else 0
    before = ledger.snapshot()
    with pytest.raises(error) as caught:
        acta_app.set_concurrency_limit(**args, expected_version=version)
    assert isinstance(caught.value, ValidationError) and caught.value.field == field
    assert ledger.snapshot() == before
    assert acta_app.gates() == []


@pytest.mark.parametrize("bad", ["fast", "0/s", "10/x", 5])
def test_a_bad_rate_override_is_refused_and_nothing_is_written(
    acta_app: Acta, acta_host: Host, ledger: Ledger, bad: Any
) -> None:
    before = ledger.snapshot()
    with pytest.raises(InvalidPolicyError) as caught:
        acta_app.set_rate_limit("carrier", bad, expected_version=0)
    assert caught.value.field == "rate"
    with pytest.raises(ValidationError) as version:
        acta_app.set_rate_limit("carrier", "5/s", expected_version=-1)
    assert version.value.field == "expected_version"
    with pytest.raises(InvalidNameError) as meter:
        acta_app.set_rate_limit("", "5/s", expected_version=0)
    assert meter.value.field == "meter"
    assert ledger.snapshot() == before
    assert acta_app.meters() == []
