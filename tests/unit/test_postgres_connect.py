"""PostgreSQL connection policy without a server: DSN handling, messages, what gets retried."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

from psycopg import errors  # noqa: E402

from acta.errors import ConfigurationError  # noqa: E402
from acta.provider.postgres.connect import Target, retry_kind  # noqa: E402


def test_url_is_parsed_and_shown_without_the_password() -> None:
    target = Target("postgresql://app:s3cret@db.example:6543/orders?sslmode=require")
    assert target.place == "db.example:6543/orders"
    assert target.public_dsn() == "postgresql://app@db.example:6543/orders?sslmode=require"
    assert "s3cret" not in target.public_dsn()
    assert target.scrub("auth failed for s3cret") == "auth failed for ***"


def test_sqlalchemy_style_and_short_schemes_are_accepted() -> None:
    for dsn in ("postgresql+psycopg://u@h/db", "postgres://u@h/db"):
        assert Target(dsn).dsn == "postgresql://u@h/db"


def test_key_value_dsn_stays_key_value_without_the_password() -> None:
    target = Target("host=db port=5433 dbname=jobs user=app password=s3cret")
    assert target.place == "db:5433/jobs"
    public = target.public_dsn()
    assert "s3cret" not in public and "host=db" in public and "dbname=jobs" in public


def test_connections_are_pooler_safe_and_named() -> None:
    kwargs = Target("postgresql://u@h/db").connect_kwargs(10)
    assert kwargs["prepare_threshold"] is None
    assert kwargs["autocommit"] is False
    assert kwargs["application_name"] == "acta"
    assert Target("postgresql://u@h/db?application_name=billing").application_name == "billing"


def test_an_unparsable_dsn_is_a_configuration_error_that_hides_its_pieces() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Target("host=db s3cret")
    assert "s3cret" not in str(caught.value)


def test_unavailable_names_the_host_and_hides_the_password() -> None:
    target = Target("postgresql://u:s3cret@db.example:5432/jobs")
    error = target.unavailable(psycopg.OperationalError("password s3cret\nrejected"))
    assert "db.example:5432/jobs" in str(error) and "s3cret" not in str(error)
    assert "\n" not in str(error)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (errors.SerializationFailure(), "retry"),
        (errors.DeadlockDetected(), "retry"),
        (errors.AdminShutdown(), "reconnect"),
        (errors.ConnectionFailure(), "reconnect"),
        (psycopg.OperationalError("the connection is closed"), "reconnect"),
        (errors.UniqueViolation(), None),
        (errors.UndefinedTable(), None),
        (ValueError("not a database error"), None),
    ],
)
def test_which_failures_run_the_verb_again(exc: BaseException, kind: str | None) -> None:
    assert retry_kind(exc, None) == kind
