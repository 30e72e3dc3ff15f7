"""A real `manage.py acta worker` process: SIGTERM while a task runs hands it back, marks the
worker stopped and exits within the grace plus one second. Real processes and real time; each
wait is bounded and reads the ledger."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.tasks import TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist
from project.shop.models import Order
from project.shop.tasks import handle_order, hold

from acta.contrib.django.backend import ActaBackend
from acta.model.codes import EventCode, Reason, WorkerStatus

pytestmark = pytest.mark.chaos
PROJECT = Path(__file__).resolve().parent
GRACE = 1.0


@pytest.fixture
def worker_process(
    backend: ActaBackend, tmp_path: Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "ACTA_DJANGO_NAME": str(connection.settings_dict["NAME"]),
    }

    def start(*args: str) -> subprocess.Popen[bytes]:
        command = [sys.executable, "manage.py", "acta", "worker", *args]
        # Its log goes to a file: a pipe nobody reads could fill and stall the worker.
        log = (tmp_path / f"worker-{len(started)}.log").open("wb")
        logs.append(log)
        proc = subprocess.Popen(command, cwd=PROJECT, env=env, stdout=log, stderr=log)
        proc.log = log.name  # type: ignore[attr-defined]
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    for log in logs:
        log.close()


def test_sigterm_hands_the_running_task_back_within_the_grace(
    backend: ActaBackend, worker_process: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    result = hold.enqueue(str(tmp_path / "never"))
    proc = worker_process("--shutdown-grace", str(GRACE), "--poll", "0.05", "--heartbeat", "0.5")
    _until(lambda: hold.get_result(result.id).status == TaskResultStatus.RUNNING, proc)
    asked = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=GRACE + 10)
    took = time.monotonic() - asked
    assert took <= GRACE + 1.0, f"the worker took {took:.2f} s to exit"
    assert proc.returncode == 0, _log(proc)
    app = backend.app_for("default")
    assert [(e.code, e.reason) for e in app.events(result.id)][-1] == (
        EventCode.HANDED_BACK,
        Reason.SHUTDOWN,
    )
    assert hold.get_result(result.id).status == TaskResultStatus.READY
    (worker,) = [w for w in app.workers() if w.pid == proc.pid]
    assert worker.status is WorkerStatus.STOPPED


class RolledBack(Exception):
    pass


# About 30 s on SQLite and 100 s on PostgreSQL on a busy two-core machine: more than the
# suite's default timeout, which is meant for tests that should take seconds.
@pytest.mark.timeout(300)
def test_500_orders_one_in_three_rolled_back(
    backend: ActaBackend, worker_process: Callable[..., subprocess.Popen[bytes]]
) -> None:
    proc = worker_process("--executors", "4", "--poll", "0.05")
    committed: dict[int, str] = {}
    rolled_back: dict[int, str] = {}
    for number in range(1, 501):
        try:
            with transaction.atomic():
                Order.objects.create(number=number)
                result = handle_order.enqueue(number)
                if number % 3 == 0:
                    raise RolledBack
        except RolledBack:
            rolled_back[number] = result.id
        else:
            committed[number] = result.id
    app = backend.app_for("default")
    name = "project.shop.tasks.handle-order"

    def done() -> int:
        return len(app.jobs(status="succeeded", name=name, limit=1000))

    _until(lambda: done() == len(committed), proc, timeout=240)
    for number, result_id in committed.items():
        result = handle_order.get_result(result_id)
        # The handler fails if its order row is not visible: one clean run each.
        assert result.status == TaskResultStatus.SUCCESSFUL, (number, result.errors)
        assert result.return_value == number and len(result.worker_ids) == 1
    for result_id in rolled_back.values():
        with pytest.raises(TaskResultDoesNotExist):
            handle_order.get_result(result_id)
    assert len(app.jobs(name=name, limit=1000)) == len(committed) == 334
    assert set(Order.objects.filter(handled=True).values_list("number", flat=True)) == set(
        committed
    )
    assert not Order.objects.filter(number__in=list(rolled_back)).exists()


def _until(
    condition: Callable[[], bool], proc: subprocess.Popen[bytes], timeout: float = 30
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the worker exited: {_log(proc)}")
        assert time.monotonic() < deadline, f"not reached in time; the worker said: {_log(proc)}"
        time.sleep(0.02)


def _log(proc: subprocess.Popen[bytes]) -> str:
    return Path(proc.log).read_text(errors="replace")  # type: ignore[attr-defined]
