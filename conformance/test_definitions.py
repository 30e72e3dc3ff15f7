"""Declaring jobs: every mistake in a name, policy, signature or configuration fails at import
time (decoration or construction), and enqueueing an undeclared job fails at the call site."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from acta import (
    Acta,
    AuditLevel,
    Backoff,
    ConfigurationError,
    InvalidNameError,
    InvalidPolicyError,
    JobContext,
    UnknownJobError,
    ValidationError,
)
from acta.provider.factory import open_provider
from acta_testing import Host

if TYPE_CHECKING:
    from conformance.conftest import FreshDatabase, Ledger


# -- unknown jobs at enqueue ---------------------------------------------------------------


def test_unknown_job_name_is_an_error_naming_it(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("send-email")
    def send() -> None:
        pass

    with pytest.raises(UnknownJobError, match="'send-emial'") as caught:
        acta_app.enqueue("send-emial")
    assert "send-email" in str(caught.value)  # the message lists what is declared
    with pytest.raises(UnknownJobError, match=r"'report\.monthly'"):
        acta_app.request("report.monthly")
    with pytest.raises(UnknownJobError):
        acta_app.enqueue("sys.recovery")  # acta's own jobs are not enqueued by name
    assert ledger.snapshot() == dict.fromkeys(ledger.snapshot(), 0)


async def test_unknown_job_name_async(acta_app: Acta, acta_async_host: Any) -> None:
    with pytest.raises(UnknownJobError, match="'nothing-here'"):
        await acta_app.enqueue_async("nothing-here")


def test_definition_of_another_app_is_unknown_here(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job("local-job")
    def local() -> None:
        pass

    other = Acta()

    @other.job("remote-job")
    def remote() -> None:
        pass

    with pytest.raises(UnknownJobError, match="'remote-job'"):
        acta_app.enqueue(remote)
    with pytest.raises(UnknownJobError, match="'remote-job'"):
        acta_app.enqueue_batch([local.request(), remote.request()])
    assert ledger.user_jobs() == 0


def test_same_named_definition_of_another_app_is_refused(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    """A definition object stands for its own application's declaration, not for a name."""

    @acta_app.job("resize")
    def mine(width: int) -> None:
        pass

    other = Acta()
    theirs = other.define("resize", input=int, max_attempts=1)
    with pytest.raises(UnknownJobError, match="'resize'"):
        acta_app.enqueue(theirs, 640)
    with pytest.raises(UnknownJobError, match="'resize'"):
        acta_app.request(theirs, 640)
    with pytest.raises(UnknownJobError, match="'resize'"):
        acta_app.enqueue_batch([theirs.request(640)])
    assert ledger.user_jobs() == 0
    assert acta_app.get(acta_app.enqueue(mine, 640)).max_attempts == 15


# -- names ---------------------------------------------------------------------------------

BAD_JOB_NAMES = {
    "uppercase": "SendEmail",
    "space": "send email",
    "leading-digit": "1send",
    "trailing-dash": "send-",
    "double-dash": "send--email",
    "underscore": "send_email",
    "empty-segment": "billing..charge",
    "trailing-dot": "billing.",
    "reserved": "sys.cleanup",
    "reserved-bare": "sys.recovery",
    "too-long": "a" * 101,
    "empty": "",
    "non-ascii": "envoyer-\u00e9",
    "fullwidth": "\uff53end",
}


@pytest.mark.parametrize("name", list(BAD_JOB_NAMES.values()), ids=list(BAD_JOB_NAMES))
def test_bad_job_names_fail_at_decoration(acta_app: Acta, name: str) -> None:
    with pytest.raises(InvalidNameError) as caught:

        @acta_app.job(name)
        def handler() -> None:
            pass

    assert caught.value.field == "job name"
    with pytest.raises(InvalidNameError):
        acta_app.define(name)
    assert acta_app.definitions == {}


def test_longest_and_dotted_names_are_fine(acta_app: Acta) -> None:
    longest = "a" * 100
    acta_app.define(longest)
    acta_app.define("billing.charge-card.v2")
    assert set(acta_app.definitions) == {longest, "billing.charge-card.v2"}


@pytest.mark.parametrize("name", [42, None, b"send"])
def test_job_names_must_be_text(acta_app: Acta, name: Any) -> None:
    with pytest.raises(InvalidNameError):
        acta_app.job(name)


BAD_SCHEMAS = ["Acta", "1acta", "acta-jobs", "acta jobs", "acta;drop", "pg_jobs", "", "a" * 64]


@pytest.mark.parametrize("schema", [*BAD_SCHEMAS, "information_schema"])
def test_bad_schema_names_fail_at_construction(schema: str, fresh_database: FreshDatabase) -> None:
    before = fresh_database.contents()
    with pytest.raises(InvalidNameError) as caught:
        Acta(fresh_database.target, schema=schema)
    assert caught.value.field == "schema"
    with pytest.raises(InvalidNameError):
        open_provider(fresh_database.target, schema=schema)
    assert fresh_database.contents() == before  # no file, no schema: nothing was created


def test_good_schema_name_holds_every_table(fresh_database: FreshDatabase) -> None:
    schema = fresh_database.schema("jobs_v2")
    app = Acta(fresh_database.target, schema=schema, apply_migrations=True)
    app.define("ping")
    app.enqueue("ping")
    provider = app.provider
    assert provider.dialect == fresh_database.dialect
    assert provider.qualify("jobs") == fresh_database.qualified(schema, "jobs")
    assert [j.name for j in app.jobs()] == ["ping"]
    assert fresh_database.missing_tables(schema) == set()
    app.close()


@pytest.mark.parametrize(
    "namespace", ["Default", "", "tenant_b", "tenant b", "-tenant", "tenant-", "9lives", "n" * 64]
)
def test_bad_namespaces_fail_at_construction(namespace: str) -> None:
    with pytest.raises(InvalidNameError) as caught:
        Acta(namespace=namespace)
    assert caught.value.field == "namespace"


# -- policies ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "backoff",
    [
        "",
        "fast",
        "1m..30s",  # cap below base
        "0s",
        "-5s",
        "1m x20",  # factor above 10
        "1m x0.5",  # factor below 1
        "1m ±60%",  # jitter above 50%
        "1m..1h..2h",
        "5 minutes",
        "1m..400d",
        42,
    ],
)
def test_bad_backoff_fails_at_decoration(acta_app: Acta, backoff: Any) -> None:
    with pytest.raises(InvalidPolicyError) as caught:

        @acta_app.job("flaky", backoff=backoff)
        def flaky() -> None:
            pass

    assert caught.value.field == "backoff"
    assert "flaky" not in acta_app.definitions


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": 1001}, "max_attempts"),
        ({"max_attempts": True}, "max_attempts"),
        ({"max_attempts": "3"}, "max_attempts"),
        ({"max_attempts": 2.0}, "max_attempts"),
        ({"timeout": "-1s"}, "timeout"),
        ({"timeout": "abc"}, "timeout"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"timeout": "400d"}, "timeout"),
        ({"audit": "verbose"}, "audit"),
        ({"audit": "FULL"}, "audit"),
        ({"audit": 2}, "audit"),
        ({"priority": 101}, "priority"),
    ],
)
def test_bad_policies_fail_at_decoration(
    acta_app: Acta, policy: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidPolicyError) as caught:
        acta_app.job("flaky", **policy)
    assert caught.value.field == field
    with pytest.raises(InvalidPolicyError):
        acta_app.define("flaky", **policy)
    assert acta_app.definitions == {}


def test_policies_as_written_are_what_the_ledger_stores(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    @acta_app.job(
        "careful",
        max_attempts=1000,
        backoff="1m..8h x2 ±10%",
        timeout=timedelta(minutes=2),
        priority=-100,
        audit="failures",
    )
    def careful() -> None:
        pass

    @acta_app.job("plain", max_attempts=1, backoff=Backoff.parse("30s"), audit=AuditLevel.OFF)
    def plain() -> None:
        pass

    careful.enqueue()
    plain.enqueue()
    rows = ledger.rows(
        "SELECT name, max_attempts, backoff, timeout_ms, priority, audit_level "
        "FROM {schema}.definitions ORDER BY name"
    )
    assert rows == [
        ("careful", 1000, "1m..8h x2 ±10%", 120_000, -100, int(AuditLevel.FAILURES)),
        ("plain", 1, "30s", None, 0, int(AuditLevel.OFF)),
    ]


# -- handler signatures --------------------------------------------------------------------


class PlainClass:
    def __init__(self, size: int) -> None:
        self.size = size


@dataclass
class Box:
    size: int


def test_handler_with_two_inputs_fails_at_decoration(acta_app: Acta) -> None:
    with pytest.raises(ConfigurationError, match="first, second"):

        @acta_app.job("two-inputs")
        def two(first: int, second: int) -> None:
            pass

    assert "two-inputs" not in acta_app.definitions


@pytest.mark.parametrize("kind", ["args", "kwargs"])
def test_handler_with_star_parameters_fails_at_decoration(acta_app: Acta, kind: str) -> None:
    def with_args(*args: int) -> None:
        pass

    def with_kwargs(box: Box, **kwargs: int) -> None:
        pass

    with pytest.raises(ConfigurationError, match=r"\*args/\*\*kwargs"):
        acta_app.job("variadic")(with_args if kind == "args" else with_kwargs)
    assert "variadic" not in acta_app.definitions


@pytest.mark.parametrize(
    "annotation", [PlainClass, object.__new__, dict[int, str], set[dict[str, int]]]
)
def test_unsupported_input_annotation_fails_at_decoration(acta_app: Acta, annotation: Any) -> None:
    def handler(value: Any) -> None:
        pass

    handler.__annotations__["value"] = annotation
    with pytest.raises(ValidationError, match="input"):
        acta_app.job("odd-input")(handler)
    with pytest.raises(ValidationError):
        acta_app.define("odd-input", input=annotation)
    assert "odd-input" not in acta_app.definitions


def test_unsupported_result_annotation_fails_at_decoration(acta_app: Acta) -> None:
    with pytest.raises(ValidationError, match="result"):

        @acta_app.job("odd-result")
        def odd() -> PlainClass:
            return PlainClass(1)

    assert "odd-result" not in acta_app.definitions


def test_decorating_something_not_callable_fails(acta_app: Acta) -> None:
    with pytest.raises(ConfigurationError, match="function"):
        acta_app.job("not-a-function")(42)  # type: ignore[arg-type]


def test_context_parameter_is_found_by_annotation_or_name(acta_app: Acta) -> None:
    @acta_app.job("by-annotation")
    def one(box: Box, runtime: JobContext) -> None:
        pass

    @acta_app.job("by-name")
    def two(ctx) -> None:  # type: ignore[no-untyped-def]  # unannotated on purpose
        pass

    assert (one.context_param, one.takes_input, one.input_type) == ("runtime", True, Box)
    assert (two.context_param, two.takes_input) == ("ctx", False)


# -- declaring twice -----------------------------------------------------------------------


def test_same_name_declared_twice_is_an_error(acta_app: Acta) -> None:
    @acta_app.job("report")
    def first() -> None:
        pass

    with pytest.raises(ConfigurationError, match="'report'"):

        @acta_app.job("report")
        def second() -> None:
            pass

    with pytest.raises(ConfigurationError, match="'report'"):
        acta_app.define("report")
    assert acta_app.definitions["report"] is first


def test_same_name_defined_twice_without_handlers_is_an_error(acta_app: Acta) -> None:
    original = acta_app.define("export", input=Box, max_attempts=3)
    with pytest.raises(ConfigurationError, match="'export'"):
        acta_app.define("export", input=int, max_attempts=9)
    assert acta_app.definitions["export"] is original
    assert original.policy.max_attempts == 3


def test_same_handler_declared_twice_is_an_error(acta_app: Acta) -> None:
    def handler() -> None:
        pass

    acta_app.job("sweep", max_attempts=2)(handler)
    with pytest.raises(ConfigurationError, match="'sweep'"):
        acta_app.job("sweep", max_attempts=50)(handler)
    assert acta_app.definitions["sweep"].policy.max_attempts == 2


def test_a_job_row_cannot_pair_a_definition_with_another_namespace(
    acta_app: Acta, acta_host: Host, ledger: Ledger
) -> None:
    acta_app.define("weekly-digest")
    ref = acta_app.enqueue("weekly-digest")
    ledger.execute(
        "INSERT INTO {schema}.namespaces (name, created_at) VALUES ('elsewhere', :at)",
        {"at": "2026-12-02 00:00:00.000"},
    )
    elsewhere = ledger.value("SELECT id FROM {schema}.namespaces WHERE name = 'elsewhere'")
    definition = ledger.value(
        "SELECT definition_id FROM {schema}.jobs WHERE job_ref = :ref", {"ref": str(ref)}
    )
    # The schema itself refuses it: a job's namespace is always its definition's.
    with pytest.raises(ledger.integrity_error()):
        ledger.execute(
            "INSERT INTO {schema}.jobs (job_ref, namespace_id, definition_id, input_codec, "
            "input, created_at) VALUES ('job_stray', :ns, :definition, 1, :input, :at)",
            {
                "ns": elsewhere,
                "definition": definition,
                "input": b"null",
                "at": "2026-12-02 00:00:00.000",
            },
        )
    assert ledger.value("SELECT count(*) FROM {schema}.jobs WHERE job_ref = 'job_stray'") == 0
