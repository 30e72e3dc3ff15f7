"""Retention's bad input: a retention that is not a duration from one minute to 365 days is
refused when the job is declared, naming the option and what it accepts, and nothing is
registered; retention settings a worker cannot use are refused when the worker is built.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from acta import Acta, ValidationError
from acta.errors import InvalidPolicyError

if TYPE_CHECKING:
    from conformance.conftest import Ledger


@pytest.mark.parametrize(
    "value",
    ["0s", "-1d", "30s", "59s", "366d", "soon", "", True, [7], timedelta(0), float("nan")],
)
def test_a_bad_retention_is_refused_at_declaration(
    acta_app: Acta, ledger: Ledger, value: Any
) -> None:
    with pytest.raises(InvalidPolicyError) as refused:

        @acta_app.job("export", retention=value)
        def export(n: int) -> None:
            return None

    assert refused.value.field == "retention"
    assert "1m to 365d" in str(refused.value)
    assert "export" not in acta_app.definitions
    with pytest.raises(InvalidPolicyError):
        acta_app.define("export", retention=value)
    assert ledger.value("SELECT count(*) FROM {schema}.definitions") == 0


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("1m", timedelta(minutes=1)),
        ("90m", timedelta(minutes=90)),
        ("14d", timedelta(days=14)),
        ("365d", timedelta(days=365)),
        (60, timedelta(minutes=1)),
        (timedelta(days=30), timedelta(days=30)),
        (None, None),
    ],
)
def test_good_retentions_are_kept_as_declared(
    acta_app: Acta, value: Any, kept: timedelta | None
) -> None:
    assert acta_app.define("export", retention=value).policy.retention == kept


def test_the_default_retention_is_a_week(acta_app: Acta) -> None:
    assert acta_app.define("export").policy.retention == timedelta(days=7)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("retention_every", "0s"),
        ("retention_every", "8d"),
        ("event_retention", "1h"),
        ("event_retention", "-5d"),
        ("retention_batch", 0),
        ("retention_batch", 10_001),
        ("retention_batch", True),
        ("retention_batch", "100"),
    ],
)
def test_retention_settings_a_worker_cannot_use_are_refused(
    acta_app: Acta, setting: str, value: Any
) -> None:
    with pytest.raises(ValidationError) as refused:
        acta_app.worker(**{setting: value})
    assert refused.value.field == setting


def test_retention_settings_default_to_hourly_a_year_of_events_and_500_rows(
    acta_app: Acta,
) -> None:
    settings = acta_app.worker().settings
    assert settings.retention_every == timedelta(hours=1)
    assert settings.event_retention == timedelta(days=365)
    assert settings.retention_batch == 500
