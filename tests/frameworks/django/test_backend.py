"""The backend's contract: results read from the ledger, signals, bad input refused with
nothing written, OPTIONS and system checks, and the migration kept in step with the ledger."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection, transaction
from django.tasks import TaskResultStatus
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued, task_finished, task_started
from django.test import override_settings
from project.shop.models import Order
from project.shop.tasks import OrderMissing, fails, handle_order, send_receipt

from acta.contrib.django import checks
from acta.contrib.django.backend import ActaBackend
from acta.contrib.django.ledger import Settings, database_url, definition_name
from acta.errors import PayloadError

DRAIN = Any


def jobs(backend: ActaBackend, queue: str = "default") -> int:
    return len(backend.app_for(queue).jobs(limit=1000))


def test_a_result_reads_the_ledger_through_its_life(backend: ActaBackend, drain: DRAIN) -> None:
    Order.objects.create(number=21)
    result = handle_order.enqueue(21)
    assert result.status == TaskResultStatus.READY and result.backend == "default"
    fresh = handle_order.get_result(result.id)
    assert fresh.status == TaskResultStatus.READY and fresh.args == [21]
    assert fresh.enqueued_at is not None and fresh.started_at is None
    assert drain("default") == 1
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 21
    assert result.started_at is not None and result.finished_at is not None
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at
    assert len(result.worker_ids) == 1 and result.worker_ids[0]
    assert result.errors == []


def test_an_async_task_on_a_mapped_queue(backend: ActaBackend, drain: DRAIN) -> None:
    result = send_receipt.enqueue(22, email="a@example.com")
    assert backend.app_for("mail").namespace == "mail"
    assert backend.app_for("mail").get(result.id).priority == 10
    assert drain("default") == 0  # the mail queue's namespace is its own
    assert drain("mail") == 1
    assert send_receipt.get_result(result.id).return_value == {"number": 22, "to": "a@example.com"}


def test_failures_carry_the_exception_class_and_traceback(
    backend: ActaBackend, drain: DRAIN
) -> None:
    result = fails.enqueue("out of stock")
    ran = 0
    for _ in range(50):  # POLICY: two attempts, 1 ms apart; each drain runs what is due
        ran += drain("default")
        result.refresh()
        if result.status == TaskResultStatus.FAILED:
            break
    assert ran == 2
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == [
        "project.shop.tasks.OrderMissing"
    ] * 2
    assert "attempt 2" in result.errors[1].traceback
    assert result.errors[0].exception_class is OrderMissing
    assert "raise OrderMissing" in result.errors[0].traceback
    assert len(result.worker_ids) == len(result.errors)
    with pytest.raises(ValueError):
        _ = result.return_value


def test_an_unknown_id_is_djangos_own_error(backend: ActaBackend) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        handle_order.get_result("not-a-ref")
    with pytest.raises(RuntimeError), transaction.atomic():
        gone = handle_order.enqueue(23)
        raise RuntimeError
    with pytest.raises(TaskResultDoesNotExist):
        handle_order.get_result(gone.id)


def test_signals_fire(backend: ActaBackend, drain: DRAIN) -> None:
    seen: list[tuple[str, str]] = []

    def record(name: str) -> Any:
        def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
            seen.append((name, str(task_result.status)))

        return receiver

    receivers = [
        (s, record(n))
        for s, n in [
            (task_enqueued, "enqueued"),
            (task_started, "started"),
            (task_finished, "finished"),
        ]
    ]
    for signal, receiver in receivers:
        signal.connect(receiver)
    try:
        Order.objects.create(number=24)
        handle_order.enqueue(24)
        drain("default")
    finally:
        for signal, receiver in receivers:
            signal.disconnect(receiver)
    assert seen == [("enqueued", "READY"), ("started", "RUNNING"), ("finished", "SUCCESSFUL")]


@pytest.mark.parametrize(
    "change",
    [
        {"priority": 101},
        {"queue_name": "nowhere"},
        {"run_after": datetime(2030, 1, 1)},  # naive # noqa: DTZ001
    ],
)
def test_bad_task_options_are_invalid_task_with_nothing_written(
    backend: ActaBackend, change: dict[str, Any]
) -> None:
    before = jobs(backend)
    with pytest.raises(InvalidTask):
        handle_order.using(**change).enqueue(25)
    assert jobs(backend) == before


def test_a_task_that_is_not_module_level_is_invalid(backend: ActaBackend) -> None:
    from django.tasks import task

    def local(n: int) -> int:
        return n

    with pytest.raises(InvalidTask):
        task(local).enqueue(1)


@pytest.mark.parametrize(
    ("args", "kwargs", "path"),
    [
        ((math.nan,), {}, "args[0]"),
        ((1, "a\x00b"), {}, "args[1]"),
        ((), {"email": "\ud800"}, "email"),
    ],
)
def test_args_the_ledger_cannot_keep_are_refused_and_the_transaction_goes_on(
    backend: ActaBackend, args: tuple[Any, ...], kwargs: dict[str, Any], path: str
) -> None:
    before = jobs(backend)
    with transaction.atomic():
        with pytest.raises(PayloadError, match=path.replace("[", r"\[").replace("]", r"\]")):
            handle_order.enqueue(*args, **kwargs)
        Order.objects.create(number=26)  # the caller's transaction is still usable
    assert Order.objects.filter(number=26).exists()
    assert jobs(backend) == before


def test_the_naming_rule() -> None:
    assert definition_name("shop.tasks.send_receipt") == "shop.tasks.send-receipt"
    assert definition_name("Shop.tasks.__private__helper") == "shop.tasks.private-helper"
    with pytest.raises(ValueError, match="cannot be named"):
        definition_name("shop.tasks.x" * 20)


def test_options_are_checked() -> None:
    with pytest.raises(ImproperlyConfigured, match="RETRIES"):
        Settings.parse("default", {"RETRIES": 3})
    with pytest.raises(ImproperlyConfigured, match="not in DATABASES"):
        Settings.parse("default", {"DATABASE": "ledger"})
    with pytest.raises(ImproperlyConfigured, match="max_tries"):
        Settings.parse("default", {"POLICY": {"max_tries": 3}})
    with pytest.raises(ImproperlyConfigured, match="backoff"):
        Settings.parse("default", {"POLICY": {"backoff": "0s"}})


def test_the_ledger_follows_djangos_test_database(db: None) -> None:
    name = str(connection.settings_dict["NAME"])
    assert database_url("default").endswith(name if connection.vendor == "sqlite" else "/" + name)
    if connection.vendor == "postgresql":
        assert database_url("default").startswith("postgresql://postgres@")
        return
    # Django's default SQLite test database is in memory: refused, naming the fix.
    connection.settings_dict["NAME"] = "file:memorydb_default?mode=memory&cache=shared"
    try:
        with pytest.raises(ImproperlyConfigured, match=r"\['TEST'\] = \{'NAME'"):
            database_url("default")
    finally:
        connection.settings_dict["NAME"] = name


def test_system_checks(backend: ActaBackend) -> None:
    assert backend.check() == [] or connection.vendor == "postgresql"
    assert checks.ledger_checks(backend) == []
    if connection.vendor == "sqlite":
        options = dict(connection.settings_dict)
        options["OPTIONS"] = {}
        with override_settings(DATABASES={"default": options}):
            from django.db import connections

            saved = connections.settings
            connections.settings = {"default": options}
            try:
                assert [m.id for m in checks.backend_checks(backend)] == ["acta.W001"]
            finally:
                connections.settings = saved


def test_migrate_brings_every_ledger_migration(backend: ActaBackend) -> None:
    # The test database was migrated: the ledger is current, and migrate has nothing left.
    assert checks.ledger_checks(backend) == []
    from acta.contrib.django.schema import migrate_ledger

    assert migrate_ledger("default") == []
    from django.apps import apps
    from django.db.models.signals import post_migrate

    assert post_migrate.has_listeners(apps.get_app_config("acta"))
    call_command("migrate", "acta", verbosity=0)  # post_migrate runs acta's migrator again
    assert checks.ledger_checks(backend) == []


def test_run_after_defers(backend: ActaBackend, drain: DRAIN) -> None:
    later = datetime.now().astimezone() + timedelta(hours=1)
    Order.objects.create(number=27)
    result = handle_order.using(run_after=later).enqueue(27)
    assert drain("default") == 0
    assert handle_order.get_result(result.id).status == TaskResultStatus.READY


def test_manage_py_acta_jobs_reads_the_backends_ledger(
    backend: ActaBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    result = handle_order.enqueue(28)
    call_command("acta", "jobs", "show", result.id)
    shown = capsys.readouterr().out
    assert result.id in shown and "project.shop.tasks.handle-order" in shown
