"""The job commits or rolls back with the rows of the caller's transaction on Django's own
connection: commit, rollback, a rolled-back savepoint, durable=True, ATOMIC_REQUESTS, and the
documented on_commit pattern. Whether a job exists is read from the ledger."""

from __future__ import annotations

from functools import partial

import pytest
from django.db import transaction
from django.tasks.exceptions import TaskResultDoesNotExist
from django.test import Client
from project.shop.models import Order
from project.shop.tasks import handle_order

from acta.contrib.django.backend import ActaBackend


class Boom(Exception):
    pass


def exists(result_id: str) -> bool:
    try:
        handle_order.get_result(result_id)
    except TaskResultDoesNotExist:
        return False
    return True


def count(backend: ActaBackend) -> int:
    return len(backend.app_for("default").jobs(limit=1000))


def test_commit(backend: ActaBackend) -> None:
    with transaction.atomic():
        Order.objects.create(number=1)
        result = handle_order.enqueue(1)
    assert exists(result.id)


def test_rollback(backend: ActaBackend) -> None:
    with pytest.raises(Boom), transaction.atomic():
        Order.objects.create(number=2)
        result = handle_order.enqueue(2)
        raise Boom
    assert not exists(result.id)
    assert not Order.objects.filter(number=2).exists()


def test_rolled_back_savepoint_inside_a_committed_block(backend: ActaBackend) -> None:
    with transaction.atomic():
        kept = handle_order.enqueue(3)
        with pytest.raises(Boom), transaction.atomic():
            dropped = handle_order.enqueue(4)
            raise Boom
    assert exists(kept.id)
    assert not exists(dropped.id)


def test_durable_block(backend: ActaBackend) -> None:
    with transaction.atomic(durable=True):
        result = handle_order.enqueue(5)
    assert exists(result.id)
    with pytest.raises(Boom), transaction.atomic(durable=True):
        gone = handle_order.enqueue(6)
        raise Boom
    assert not exists(gone.id)


def test_atomic_requests_view_that_raises(backend: ActaBackend) -> None:
    client = Client(raise_request_exception=False)
    before = count(backend)
    assert client.get("/place/7?fail=1").status_code == 500
    assert count(backend) == before
    assert not Order.objects.filter(number=7).exists()
    ok = client.get("/place/8")
    assert ok.status_code == 200 and exists(ok.json()["id"])
    assert count(backend) == before + 1


def test_the_on_commit_pattern(backend: ActaBackend) -> None:
    before = count(backend)
    with pytest.raises(Boom), transaction.atomic():
        transaction.on_commit(partial(handle_order.enqueue, 9))
        raise Boom
    assert count(backend) == before
    with transaction.atomic():
        Order.objects.create(number=10)
        transaction.on_commit(partial(handle_order.enqueue, 10))
    assert count(backend) == before + 1


def test_a_committed_order_runs_once_its_row_is_visible(backend: ActaBackend, drain) -> None:  # type: ignore[no-untyped-def]
    with transaction.atomic():
        Order.objects.create(number=11)
        result = handle_order.enqueue(11)
    assert drain("default") == 1
    assert Order.objects.get(number=11).handled
    assert handle_order.get_result(result.id).return_value == 11


async def test_aenqueue_from_async_code(backend: ActaBackend) -> None:
    from asgiref.sync import sync_to_async

    result = await handle_order.aenqueue(12)
    assert await sync_to_async(exists)(result.id)
    fresh = await handle_order.aget_result(result.id)
    assert fresh.args == [12]
