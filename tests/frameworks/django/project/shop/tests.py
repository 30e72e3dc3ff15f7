"""Run by Django's own test runner (`manage.py test project.shop`): the guide's test style
under TransactionTestCase, with the ledger in the test database migrate created."""

from __future__ import annotations

from django.core.management import call_command
from django.db import transaction
from django.tasks import TaskResultStatus
from django.test import TransactionTestCase

from project.shop.models import Order
from project.shop.tasks import handle_order


class OrderTasks(TransactionTestCase):
    def test_a_committed_order_is_handled(self) -> None:
        with transaction.atomic():
            Order.objects.create(number=31)
            result = handle_order.enqueue(31)
        call_command("acta", "worker", "--batch", "--queue", "default", stdout=_Sink())
        self.assertTrue(Order.objects.get(number=31).handled)
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, 31)

    def test_a_rolled_back_order_has_no_task(self) -> None:
        before = _count()
        with self.assertRaises(ZeroDivisionError), transaction.atomic():
            Order.objects.create(number=32)
            handle_order.enqueue(32)
            _ = 1 / 0
        self.assertEqual(_count(), before)


def _count() -> int:
    from django.tasks import task_backends

    return len(task_backends["default"].app_for("default").jobs(limit=1000))


class _Sink:
    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass
